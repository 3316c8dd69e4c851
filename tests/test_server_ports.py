"""The test servers start on a port picked free a moment before they bind it: when another
process took it meanwhile (here: the session's own server of the same kind, which answers
there as ours would), a server starts again on another port instead of handing out the other
one's address."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest
from sqlalchemy.engine import make_url

from resources.spark_server import free_port
from tests import server_ports
from tests.postgres_server import new_database, postgres_server
from tests.s3_server import moto_server, new_bucket


def take_first_pick(monkeypatch: pytest.MonkeyPatch, taken: int) -> None:
    """The servers' first free port is `taken`, as if another process took it after the pick."""
    chosen = iter([taken])
    monkeypatch.setattr(server_ports, "free_port", lambda: next(chosen, None) or free_port())


def test_moto_starts_again_when_its_port_is_taken(
    s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = urlparse(s3_endpoint).port
    assert taken is not None
    take_first_pick(monkeypatch, taken)
    with moto_server(tmp_path) as endpoint:
        assert urlparse(endpoint).port != taken
        s3, bucket = new_bucket(endpoint)
        assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == [bucket]


def test_postgres_starts_again_when_its_port_is_taken(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = make_url(postgres_url).port
    assert taken is not None
    take_first_pick(monkeypatch, taken)
    with postgres_server() as url:
        assert make_url(url).port != taken
        new_database(url)
