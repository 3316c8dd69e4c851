"""Names and secrets stay in their boxes: an `env:` reference reaches only the variables the
operator allowed, object names never become paths outside the warehouse, and LOCAL volumes lie
under allowed roots. Most of these run without Spark: they are refused before it starts."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import pytest
from botocore.exceptions import ClientError
from pyspark.sql import SparkSession

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from lake_assets.core.names import MAX_NAME_LENGTH, checked_name
from lake_assets.core.settings import LakeSettings, local_roots
from lake_assets.frames import Session
from lake_assets.kinds import parse_statement
from lake_assets.session import LakeSession
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.stores import open_store
from resources.secrets import seal, unseal
from resources.storage import local_root, split_location
from resources.volumes import endpoint_url

CANARY = "canary-7f3e9a-never-send-me"


class _Capture(BaseHTTPRequestHandler):
    """Records every request it receives and answers as S3 does when access is denied."""

    seen: list[str]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode(errors="replace") if length else ""
        self.seen.append(f"{self.command} {self.path}\n{self.headers}\n{body}")
        reply = b"<Error><Code>AccessDenied</Code><Message>denied</Message></Error>"
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads `seen`."""


@pytest.fixture
def capture() -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 (a free port) that records what reaches it: its URL and records."""
    seen: list[str] = []
    handler = type("Handler", (_Capture,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _no_spark() -> SparkSession:
    raise AssertionError("this statement must be refused before Spark starts")


@pytest.fixture
def catalog_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LakeSession:
    """A session whose statements must all be settled by the catalog, never by Spark."""
    for variable in ("LAKE_ENV_REFERENCES", "LAKE_LOCAL_ROOTS", "LAKE_CATALOG_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LAKE_CANARY_SECRET", CANARY)
    settings = LakeSettings(lake_home=tmp_path / "lake")
    settings.lake_home.mkdir()
    return LakeSession(Catalog(settings.catalog_location), settings, _no_spark)


# Secrets: env: references


def test_create_connection_refuses_a_variable_the_operator_did_not_allow(catalog_only, capture):
    url, seen = capture
    with pytest.raises(LakeError) as caught:
        catalog_only.sql(
            f"CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = '{url}' "
            "ACCESS_ID = 'env:LAKE_CANARY_SECRET' ACCESS_KEY = 'env:LAKE_CANARY_SECRET'"
        )
    assert "the operator did not allow" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert CANARY not in str(caught.value)
    assert catalog_only.catalog.find(ConnectionEntry, "c") is None
    assert seen == []


def _smuggled(session: LakeSession, endpoint: str, reference: str) -> None:
    """A connection stored as an older version or another process's settings would store it."""
    session.catalog.add(
        ConnectionEntry(
            name="smuggled",
            created_at=now_utc(),
            type="S3",
            endpoint=endpoint,
            access_id=reference,
            access_key=reference,
            region="us-east-1",
        )
    )
    session.catalog.add(
        VolumeEntry(
            name="v", created_at=now_utc(), location="s3://bucket/data/", connection="smuggled"
        )
    )


def test_a_smuggled_reference_fails_at_use_and_sends_nothing(catalog_only, capture, monkeypatch):
    url, seen = capture
    _smuggled(catalog_only, url, "env:LAKE_CANARY_SECRET")
    with pytest.raises(LakeError) as caught:
        catalog_only.sql("DESC VOLUME v")
    assert "env:LAKE_CANARY_SECRET" in str(caught.value)
    assert CANARY not in str(caught.value)
    assert "\n" not in str(caught.value)
    assert seen == []

    # The same request, once the operator allows the variable, does reach the server with it:
    # the capture would have seen the leak.
    monkeypatch.setenv("LAKE_ENV_REFERENCES", "LAKE_CANARY_*")
    with pytest.raises((ClientError, LakeError), match="AccessDenied"):  # the server denies all
        catalog_only.sql("DESC VOLUME v")
    assert any(CANARY in request for request in seen)


@pytest.mark.parametrize(
    ("allowed", "variable", "ok"),
    [
        ("", "LAKE_CONN_S3_KEY", True),
        ("", "AWS_SECRET_ACCESS_KEY", False),
        ("", "LAKE_SECRET_KEY", False),
        ("LAKE_SECRET_KEY,LAKE_*", "LAKE_SECRET_KEY", False),
        ("LAKE_*", "LAKE_CANARY_SECRET", True),
        ("MY_ID, MY_KEY", "MY_KEY", True),
        ("MY_ID", "MY_IDX", False),
        ("MY_*", "OTHER", False),
    ],
)
def test_only_allowed_variables_are_read(tmp_path, monkeypatch, allowed, variable, ok):
    monkeypatch.setenv("LAKE_ENV_REFERENCES", allowed)
    monkeypatch.setenv(variable, "value")
    monkeypatch.setenv("LAKE_SECRET_KEY", "not-a-key-but-never-read")
    reference = f"env:{variable}"
    if ok:
        assert seal(reference, tmp_path) == reference
        assert unseal(reference, tmp_path) == "value"
    else:
        for step in (seal, unseal):
            with pytest.raises(LakeError, match="the operator did not allow"):
                step(reference, tmp_path)


@pytest.mark.parametrize("entry", ["*", "A-B", "X Y*"])
def test_an_allow_list_entry_that_is_no_name_or_prefix_is_refused(tmp_path, monkeypatch, entry):
    monkeypatch.setenv("LAKE_ENV_REFERENCES", entry)
    with pytest.raises(LakeError, match="LAKE_ENV_REFERENCES"):
        unseal("env:LAKE_CONN_X", tmp_path)


def test_lake_endpoints_limits_where_a_connection_may_send_credentials(monkeypatch):
    monkeypatch.delenv("LAKE_ENDPOINTS", raising=False)
    assert endpoint_url("c", "anywhere.example:9000") == "https://anywhere.example:9000"
    monkeypatch.setenv("LAKE_ENDPOINTS", "minio.internal:9000, s3.example.com")
    assert endpoint_url("c", "http://minio.internal:9000") == "http://minio.internal:9000"
    assert endpoint_url("c", "https://S3.example.com/") == "https://S3.example.com/"
    assert endpoint_url("c", None) is None  # the provider's own endpoint
    for endpoint in (
        "http://127.0.0.1:9000",
        "minio.internal:9001",
        "s3.example.com.evil",
        "minio.internal:x",
    ):
        with pytest.raises(LakeError, match="not one LAKE_ENDPOINTS allows"):
            endpoint_url("c", endpoint)


def test_create_connection_refuses_an_endpoint_lake_endpoints_does_not_allow(
    catalog_only, capture, monkeypatch
):
    url, seen = capture
    monkeypatch.setenv("LAKE_ENDPOINTS", "minio.internal:9000")
    with pytest.raises(LakeError, match="not one LAKE_ENDPOINTS allows"):
        catalog_only.sql(f"CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = '{url}'")
    _smuggled(catalog_only, url, "env:LAKE_CONN_ANY")
    with pytest.raises(LakeError, match="not one LAKE_ENDPOINTS allows"):
        catalog_only.sql("DESC VOLUME v")
    assert seen == []


def test_a_kafka_pipe_refuses_a_variable_the_operator_did_not_allow():
    with pytest.raises(LakeError, match="the operator did not allow"):
        parse_statement(
            "CREATE PIPE kp AS COPY INTO t FROM (SELECT * FROM TABLE(READ_KAFKA('b:9092', 't', "
            "'', 'g', '', '', '', '', 'raw', 'raw', 0, "
            "map('sasl.password', 'env:AWS_SECRET_ACCESS_KEY'))))"
        )


# Names


KINDS = {
    "table": "CREATE TABLE {} (a INT)",
    "dynamic table": "CREATE DYNAMIC TABLE {} AS SELECT * FROM t",
    "volume": "CREATE EXTERNAL VOLUME {} LOCATION 'file:///tmp/v/' USING CONNECTION c",
    "pipe": "CREATE PIPE {} AS COPY INTO t FROM VOLUME v USING CSV",
    "stream": "CREATE TABLE STREAM {} ON TABLE t",
    "task": "CREATE TASK {} AS INSERT INTO t SELECT * FROM s",
    "connection": "CREATE STORAGE CONNECTION {} TYPE LOCAL",
    "export": "CREATE CHANGELOG EXPORT {} FROM TABLE t TO TABLE target",
    "view": "CREATE VIEW {} AS SELECT * FROM t",
}
BAD_NAMES = [
    "`x/../../../../tmp/esc`",
    "` `",
    "``",
    "`a-b`",
    "`ünï`",
    "`1abc`",
    "`__lake_source_x`",
    "__LAKE_x",
    "`class`",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_out_of_the_rule_is_refused_for_every_kind(kind, name):
    with pytest.raises(LakeError) as caught:
        parse_statement(KINDS[kind].format(name))
    assert "cannot be a" in caught.value.what
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", KINDS)
def test_the_name_rule_is_exact_at_its_edges(kind):
    """Backquotes may quote a reserved word, and a name may be MAX_NAME_LENGTH long, no more."""
    assert parse_statement(KINDS[kind].format("`Select`")).name == "select"
    longest = "_" + "a" * (MAX_NAME_LENGTH - 1)
    assert parse_statement(KINDS[kind].format(longest)).name == longest
    with pytest.raises(LakeError, match="at most"):
        parse_statement(KINDS[kind].format(longest + "a"))


@pytest.mark.parametrize("name", ["_", "a", "select", "lake_x", "_" + "a" * (MAX_NAME_LENGTH - 1)])
def test_a_valid_name_is_a_valid_dagster_name(name):
    assert checked_name(name, "a name") == name
    dg.SensorDefinition(name=name, evaluation_fn=lambda context: None)
    dg.asset(name=name)(lambda: None)
    dg.define_asset_job(f"ingest_{name}_job", selection=[name])


@pytest.mark.parametrize("name", ["input", "context", "class", "def", "type"])
def test_a_name_dagster_refuses_is_refused(name):
    with pytest.raises(dg.DagsterInvalidDefinitionError):
        dg.SensorDefinition(name=name, evaluation_fn=lambda context: None)
    with pytest.raises(LakeError, match="Dagster reserves it"):
        checked_name(name, "a pipe name")


def test_a_status_table_named_as_a_string_keeps_the_rule():
    with pytest.raises(LakeError, match="cannot be a status table name"):
        parse_statement(
            "CREATE CHANGELOG EXPORT e FROM TABLE t TO TABLE target STATUS_TABLE = '../esc'"
        )


def test_a_path_like_table_creates_nothing_outside_the_warehouse(catalog_only, tmp_path):
    for statement in ("CREATE TABLE `x/../../../../esc` (a INT)", "CREATE TABLE ` ` (a INT)"):
        with pytest.raises(LakeError, match="cannot be a table name"):
            catalog_only.sql(statement)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["lake"]
    with pytest.raises(LakeError, match="outside the warehouse"):
        catalog_only.warehouse_path("..", "esc")


def test_the_python_api_takes_names_by_the_same_rule(catalog_only):
    session = Session(catalog_only)
    for name in ("`x/../esc`", "__lake_source_0", "a b"):
        with pytest.raises(LakeError):
            session.table(name)


def test_a_hidden_name_in_a_query_is_not_left_unbound():
    for query in ("SELECT * FROM __lake_source_x", "SELECT * FROM `__lake_query_t`"):
        with pytest.raises(LakeError, match="keeps for itself"):
            parse_statement(query)
    assert parse_statement("SELECT * FROM VOLUME v USING CSV").sources


def test_a_string_that_spells_a_placeholder_stays_verbatim(lake):
    lake.sql(
        "CREATE TABLE ts (a INT); CREATE TABLE STREAM s ON TABLE ts; INSERT INTO ts VALUES (1)"
    )
    (result,) = lake.sql("SELECT '__lake_query_s' AS tag, /* __lake_query_s */ a FROM s")
    assert [tuple(row) for row in result.rows] == [("__lake_query_s", 1)]


# LOCAL volume locations


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("file://otherhost/data/", "names a host"),
        ("file://evil.example/etc/", "names a host"),
        ("file:///data/x/?y=1", "names a host, a query"),
        ("file:///tmp/../etc/", "contains '..'"),
        ("file:///tmp/a/..", "contains '..'"),
    ],
)
def test_a_local_location_says_plainly_where_it_is(location, message):
    with pytest.raises(LakeError, match=message):
        split_location(location)


def test_localhost_and_dots_are_read_plainly():
    assert split_location("file://localhost/data/x/") == ("file", "", "/data/x/")
    assert split_location("file:///data/./x//") == ("file", "", "/data/x/")


def test_a_local_volume_lies_under_an_allowed_root(tmp_path):
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    (allowed / "data").mkdir(parents=True)
    other.mkdir()
    (allowed / "escape").symlink_to(other, target_is_directory=True)
    roots = (allowed.resolve(),)
    assert local_root(f"file://{allowed}/data/", roots) == (allowed / "data").resolve()
    for location in (f"file://{other}/", "file:///etc/", f"file://{allowed}/escape/"):
        with pytest.raises(LakeError, match="outside the directories LOCAL volumes may use"):
            local_root(location, roots)
    with pytest.raises(LakeError, match="LAKE_LOCAL_ROOTS"):
        local_root(f"file://{allowed}/data/", ())
    with pytest.raises(LakeError, match="not an absolute path"):
        local_roots({"LAKE_LOCAL_ROOTS": f"{allowed}{os.pathsep}relative/dir"}, tmp_path)


def test_create_volume_refuses_a_location_outside_the_allowed_roots(
    catalog_only, tmp_path, monkeypatch
):
    allowed = tmp_path / "files"
    monkeypatch.setenv("LAKE_LOCAL_ROOTS", str(allowed))
    catalog_only.sql("CREATE STORAGE CONNECTION c TYPE LOCAL")
    for location in ("file:///etc/", f"file://{tmp_path}/lake/"):
        with pytest.raises(LakeError, match="outside the directories LOCAL volumes may use"):
            catalog_only.sql(f"CREATE EXTERNAL VOLUME v LOCATION '{location}' USING CONNECTION c")
    assert catalog_only.catalog.find(VolumeEntry, "v") is None


def test_default_roots_are_open_on_a_laptop_and_closed_when_shared(tmp_path, monkeypatch):
    monkeypatch.delenv("LAKE_LOCAL_ROOTS", raising=False)
    monkeypatch.delenv("LAKE_CATALOG_URL", raising=False)
    lake_home = tmp_path / "checkout" / "dagster_home" / "lake"
    monkeypatch.setenv("DAGSTER_HOME", str(lake_home.parent))
    volume = VolumeEntry(
        name="v",
        created_at="",
        location=f"file://{lake_home.parent}/demo-files/",
        connection="c",
    )
    connection = ConnectionEntry(name="c", created_at="", type="LOCAL")
    assert (
        open_store(volume, connection, lake_home).local_path("")
        == (lake_home.parent / "demo-files").resolve()
    )
    etc = VolumeEntry(name="e", created_at="", location="file:///etc/", connection="c")
    with pytest.raises(LakeError, match="outside the directories"):
        open_store(etc, connection, lake_home)
    monkeypatch.setenv("LAKE_CATALOG_URL", "postgresql://db/lake")
    with pytest.raises(LakeError, match="name the directories LOCAL volumes may use"):
        open_store(volume, connection, lake_home)
