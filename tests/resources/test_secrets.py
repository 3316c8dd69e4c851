"""Connection secrets: sealed before the catalog sees them, unsealed only for the client."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from lake_assets.connections.entry import ConnectionEntry
from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import now_utc
from lake_assets.core.errors import LakeError
from resources import secrets
from resources.secrets import REDACTED, seal, shown, unseal

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def lake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LAKE_SECRET_KEY", raising=False)
    return tmp_path / "lake"


def test_a_literal_is_sealed_as_ciphertext(lake_home):
    sealed = seal(SECRET, lake_home)
    assert sealed.startswith("enc:")
    assert SECRET not in sealed
    assert unseal(sealed, lake_home) == SECRET


def test_sealing_twice_gives_different_ciphertexts_of_the_same_secret(lake_home):
    first, second = seal(SECRET, lake_home), seal(SECRET, lake_home)
    assert first != second
    assert unseal(first, lake_home) == unseal(second, lake_home) == SECRET


@pytest.mark.parametrize("literal", ["", " ", "ünïcødé 🔑", "env", "enc:looks-sealed"])
def test_any_literal_round_trips(lake_home, literal):
    sealed = seal(literal, lake_home)
    assert sealed.startswith("enc:")
    assert unseal(sealed, lake_home) == literal


def test_the_key_file_is_created_once_readable_only_by_its_owner(lake_home):
    key_file = lake_home / "secret.key"
    assert not lake_home.exists()
    sealed = seal(SECRET, lake_home)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_bytes()
    Fernet(key)  # a valid Fernet key
    seal("another", lake_home)
    assert key_file.read_bytes() == key
    assert unseal(sealed, lake_home) == SECRET


def test_a_key_file_created_meanwhile_by_another_process_is_used(lake_home, monkeypatch):
    other_key = Fernet.generate_key()
    real_link = os.link

    def another_process_wins_the_race(source, target):
        Path(target).write_bytes(other_key)
        return real_link(source, target)

    monkeypatch.setattr(secrets.os, "link", another_process_wins_the_race)
    sealed = seal(SECRET, lake_home)
    assert Fernet(other_key).decrypt(sealed[len("enc:") :].encode()).decode() == SECRET


def test_lake_secret_key_replaces_the_key_file(lake_home, monkeypatch):
    monkeypatch.setenv("LAKE_SECRET_KEY", Fernet.generate_key().decode())
    sealed = seal(SECRET, lake_home)
    assert not (lake_home / "secret.key").exists()
    assert unseal(sealed, lake_home) == SECRET


def test_an_env_reference_stays_a_reference(lake_home, monkeypatch):
    monkeypatch.setenv("LAKE_CONN_TEST_SECRET", SECRET)
    assert seal("env:LAKE_CONN_TEST_SECRET", lake_home) == "env:LAKE_CONN_TEST_SECRET"
    assert not (lake_home / "secret.key").exists()
    assert unseal("env:LAKE_CONN_TEST_SECRET", lake_home) == SECRET


def test_an_env_reference_is_read_when_unsealed_not_when_sealed(lake_home, monkeypatch):
    monkeypatch.delenv("LAKE_CONN_TEST_SECRET", raising=False)
    sealed = seal("env:LAKE_CONN_TEST_SECRET", lake_home)
    monkeypatch.setenv("LAKE_CONN_TEST_SECRET", "rotated")
    assert unseal(sealed, lake_home) == "rotated"


def test_a_missing_env_variable_is_named(lake_home, monkeypatch):
    monkeypatch.delenv("LAKE_CONN_TEST_MISSING", raising=False)
    with pytest.raises(LakeError) as caught:
        unseal("env:LAKE_CONN_TEST_MISSING", lake_home)
    assert caught.value.what == "environment variable LAKE_CONN_TEST_MISSING is not set"
    assert "export LAKE_CONN_TEST_MISSING" in caught.value.fix


def test_an_empty_env_variable_is_an_empty_secret(lake_home, monkeypatch):
    monkeypatch.setenv("LAKE_CONN_TEST_EMPTY", "")
    assert unseal("env:LAKE_CONN_TEST_EMPTY", lake_home) == ""


def test_none_stays_none(lake_home):
    assert seal(None, lake_home) is None
    assert unseal(None, lake_home) is None
    assert shown(None) is None
    assert not lake_home.exists()


def test_another_lake_secret_key_cannot_unseal(lake_home, monkeypatch):
    sealed = seal(SECRET, lake_home)
    monkeypatch.setenv("LAKE_SECRET_KEY", Fernet.generate_key().decode())
    with pytest.raises(LakeError, match="cannot be decrypted") as caught:
        unseal(sealed, lake_home)
    assert SECRET not in str(caught.value)
    assert "restore the original key" in caught.value.fix


def test_another_lake_homes_key_file_cannot_unseal(lake_home, tmp_path):
    sealed = seal(SECRET, lake_home)
    with pytest.raises(LakeError, match="cannot be decrypted"):
        unseal(sealed, tmp_path / "another-lake")


@pytest.mark.parametrize("reference", ["enc:", "enc:not-a-token", "enc:" + "A" * 120])
def test_a_damaged_ciphertext_cannot_be_unsealed(lake_home, reference):
    seal("make the key", lake_home)
    with pytest.raises(LakeError, match="cannot be decrypted"):
        unseal(reference, lake_home)


def test_a_malformed_lake_secret_key_is_a_lake_error(lake_home, monkeypatch):
    monkeypatch.setenv("LAKE_SECRET_KEY", "hunter2")
    with pytest.raises(LakeError, match="LAKE_SECRET_KEY"):
        seal(SECRET, lake_home)


@pytest.mark.parametrize(
    "reference", ["env:LAKE_CONN_TEST_SECRET", "enc:gAAAAABtoken", "", "plain"]
)
def test_every_secret_is_shown_redacted(reference):
    assert shown(reference) == REDACTED == "****"


def test_the_catalog_never_stores_the_literal_secret(lake_home, monkeypatch):
    monkeypatch.setenv("LAKE_CONN_TEST_ACCESS_ID", "AKIAENVONLYVALUE")
    catalog = Catalog(lake_home / "catalog.db")
    sealed = seal(SECRET, lake_home)
    entry = ConnectionEntry(
        name="warehouse_bucket",
        created_at=now_utc(),
        type="S3",
        endpoint="http://127.0.0.1:9000",
        access_id=seal("env:LAKE_CONN_TEST_ACCESS_ID", lake_home),
        access_key=sealed,
        region="us-east-1",
    )
    catalog.add(entry)

    stored = catalog.find(ConnectionEntry, "warehouse_bucket")
    assert stored == entry
    assert unseal(stored.access_key, lake_home) == SECRET
    assert unseal(stored.access_id, lake_home) == "AKIAENVONLYVALUE"

    files = [path for path in lake_home.glob("catalog.db*") if path.is_file()]
    raw = b"".join(path.read_bytes() for path in files)
    assert sealed.encode() in raw, f"the sealed reference should be in {files}"
    assert b"env:LAKE_CONN_TEST_ACCESS_ID" in raw
    assert SECRET.encode() not in raw
    assert b"AKIAENVONLYVALUE" not in raw
