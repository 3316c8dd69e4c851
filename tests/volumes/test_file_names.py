"""Any file name a volume can hold is read literally: each file loads exactly once."""

from __future__ import annotations

import uuid
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lake_assets.pipes.load_records import load_history
from lake_assets.session import LakeSession
from resources.storage import is_visible
from tests.ingest_helpers import local_volume, message, put, rows

# Printable characters (letters and marks of any script, digits, punctuation, symbols, spaces),
# half of them Hadoop's glob characters, ':' and URI delimiters; never '/' or '\\' (separators).
_CHARACTERS = st.sampled_from("*?[]{}:,#% ") | st.characters(
    categories=["L", "M", "N", "P", "S", "Zs"], exclude_characters="/\\"
)
# Hidden, bookkeeping and half-written names are not data, by design; a volume path's outer
# whitespace is trimmed (resources.storage.inside), so names here have none.
_NAMES = st.text(_CHARACTERS, min_size=1, max_size=12).filter(
    lambda name: is_visible(name) and name == name.strip()
)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(_NAMES, min_size=1, max_size=4, unique=True))
@example(names=["x1", "x*", "x[1]", "a:b{1}"])  # a glob would read x1 thrice; ':' beside '{'
def test_every_file_name_loads_exactly_once(
    lake: LakeSession, tmp_path: Path, names: list[str]
) -> None:
    run = uuid.uuid4().hex[:8]
    volume = local_volume(lake, tmp_path / run, f"v{run}")
    lake.sql(f"CREATE TABLE t{run} (id BIGINT)")
    for number, name in enumerate(names):
        put(volume, name, f"{number}\n")
    copy = f"COPY INTO t{run} FROM VOLUME v{run} USING CSV"
    assert message(lake, copy) == (
        f"COPY: {len(names)} files loaded ({len(names)} rows), 0 failed, 0 purged; "
        f"t{run} is at version 1"
    )
    assert rows(lake, f"SELECT id FROM t{run} ORDER BY id") == [(n,) for n in range(len(names))]
    records = load_history(lake.catalog, f"t{run}")
    assert sorted(r.file_path for r in records) == sorted(
        (volume / name).as_uri() for name in names
    )
    assert {(r.status, r.rows_loaded) for r in records} == {("LOADED", 1)}
    assert message(lake, copy) == "COPY: 0 files loaded (0 rows), 0 failed, 0 purged"
