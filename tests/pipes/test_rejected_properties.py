"""For random CSV files, with random bad records and their columns in random orders, loaded by name
with ON_ERROR = CONTINUE, a crash at a random step and a rerun: every good record is in the table
once, every bad one in rejected_rows once (with its number in its file), and each file's load
record counts both."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets.pipes.loading import AFTER_COMMIT, BEFORE_COMMIT
from lake_assets.session import LakeSession
from tests.crashes import Crash, crash_at
from tests.ingest_helpers import local_volume, put, rows

COLUMNS = ("id", "name", "amount")
# A file: its columns' order, and for each record whether it is bad (its amount is not a number).
FILES = st.lists(
    st.tuples(st.permutations(COLUMNS), st.lists(st.booleans(), min_size=1, max_size=6)),
    min_size=1,
    max_size=3,
)


def file_text(order: list[str], bad: list[bool], first_id: int) -> str:
    lines = [",".join(order)]
    for offset, wrong in enumerate(bad):
        values = {"id": str(first_id + offset), "name": f"n{first_id + offset}"}
        values["amount"] = "oops" if wrong else f"{offset}.25"
        lines.append(",".join(values[column] for column in order))
    return "\n".join(lines) + "\n"


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=FILES, crash=st.sampled_from([None, BEFORE_COMMIT, AFTER_COMMIT]))
def test_loaded_plus_rejected_is_every_record_once(
    lake: LakeSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: list[tuple[list[str], list[bool]]],
    crash: str | None,
) -> None:
    run = uuid.uuid4().hex[:8]
    volume = local_volume(lake, tmp_path / run, f"v{run}")
    lake.sql(f"CREATE TABLE t{run} (id BIGINT, name STRING, amount DECIMAL(10,2))")
    good, bad = set(), set()
    for number, (order, wrong) in enumerate(files):
        first = 100 * number
        put(volume, f"f{number}.csv", file_text(order, wrong, first))
        for offset, is_bad in enumerate(wrong):
            line = offset + 2  # the header is line 1
            (bad if is_bad else good).add((f"f{number}.csv", line, first + offset))
    copy = (
        f"COPY INTO t{run} FROM VOLUME v{run} USING CSV OPTIONS('header' = 'true') "
        "MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = CONTINUE"
    )
    if crash is not None:
        crash_at(monkeypatch, crash)
        with pytest.raises(Crash):
            lake.sql(copy)
        monkeypatch.undo()
    lake.sql(copy)
    lake.sql(copy)  # nothing is left to load

    loaded = Counter(i for (i,) in rows(lake, f"SELECT id FROM t{run}"))
    assert loaded == Counter(i for *_, i in good)
    rejected = Counter(
        (path.rsplit("/", 1)[1], number, column)
        for path, number, column in rows(
            lake, f"SELECT file_path, row_number, column_name FROM rejected_rows('t{run}')"
        )
    )
    assert rejected == Counter((name, number, "amount") for name, number, _ in bad)
    counted = rows(
        lake, f"SELECT file_path, rows_loaded, rows_rejected FROM load_history('t{run}')"
    )
    assert sorted((p.rsplit("/", 1)[1], n, r) for p, n, r in counted) == [
        (f"f{number}.csv", wrong.count(False), wrong.count(True))
        for number, (_, wrong) in enumerate(files)
    ]
