"""CSV is read and written as RFC 4180 (a quote inside a quoted field is doubled), so that what
any exporter writes loads as it was typed, and what the project writes it reads back."""

from __future__ import annotations

import csv
import io
import uuid
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lake_assets.session import LakeSession
from tests.ingest_helpers import local_volume, message, put, rows

# Text of any script with CSV's own characters mixed in: quotes, separators, line feeds,
# backslashes and spaces. Control characters are left out: Spark's parser reads a carriage return
# inside a quoted value as a line feed, and drops a NUL right before a doubled quote.
_VALUES = st.text(
    st.sampled_from("\"',\n\\ ") | st.characters(categories=["L", "M", "N", "P", "S", "Zs"]),
    max_size=12,
)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.tuples(_VALUES, _VALUES), min_size=1, max_size=5))
@example(values=[('say "hi"', '""'), ("a,b", "two\nlines"), (" padded ", "back\\slash")])
def test_csv_written_by_pythons_csv_module_loads_back_exactly(
    lake: LakeSession, tmp_path: Path, values: list[tuple[str, str]]
) -> None:
    run = uuid.uuid4().hex[:8]
    volume = local_volume(lake, tmp_path / run, f"v{run}")
    lake.sql(f"CREATE TABLE t{run} (id BIGINT, a STRING, b STRING)")
    text = io.StringIO()
    # Rows end in LF: with multiLine, Spark takes a file's first line break as its row separator,
    # so a CRLF file whose first row holds a quoted LF would read each row's end as a CR.
    rows_out = csv.writer(text, lineterminator="\n")
    rows_out.writerows((number, a, b) for number, (a, b) in enumerate(values))
    put(volume, "data.csv", text.getvalue().encode())
    # A line break inside a quoted value needs multiLine (off by default: see docs/volumes.md).
    copy = f"COPY INTO t{run} FROM VOLUME v{run} USING CSV OPTIONS('multiLine' = 'true')"
    assert message(lake, copy).startswith(f"COPY: 1 files loaded ({len(values)} rows), 0 failed")
    # An empty field is NULL: CSV has no other way to write one.
    assert rows(lake, f"SELECT a, b FROM t{run} ORDER BY id") == [
        (a or None, b or None) for a, b in values
    ]


def test_a_doubled_quote_is_one_quote_a_backslash_escape_is_an_option_and_exports_round_trip(
    lake: LakeSession, tmp_path: Path
) -> None:
    volume = local_volume(lake, tmp_path / "files")
    lake.sql("CREATE TABLE t (id BIGINT, v STRING)")
    put(volume, "quoted.csv", '7,"say ""hi"""\n')
    put(volume, "escaped.csv", '8,"say \\"hi\\""\n')
    assert message(lake, "COPY INTO t FROM VOLUME v USING CSV FILES('quoted.csv')").startswith(
        "COPY: 1 files loaded (1 rows)"
    )
    assert rows(lake, "SELECT v FROM t") == [('say "hi"',)]
    escaped = "FROM VOLUME v USING CSV OPTIONS('escape' = '\\\\') FILES('escaped.csv')"
    assert rows(lake, f"SELECT f1 {escaped}") == [('say "hi"',)]

    # What COPY INTO VOLUME writes is RFC 4180, its values whole, and reads back as it was.
    lake.sql(
        "INSERT INTO t VALUES (1, '  padded  '), (2, 'back\\\\slash'), (3, 'a,b'), "
        "(4, 'two\nlines'), (5, '\"')"
    )
    assert message(
        lake, "COPY INTO VOLUME v SUBDIRECTORY 'out' FROM TABLE t FILE_FORMAT = (TYPE = CSV)"
    ) == ("exported to volume v: out/part00001.csv")
    expected = sorted(rows(lake, "SELECT id, v FROM t"))
    assert expected[1:] == [
        (2, "back\\slash"), (3, "a,b"), (4, "two\nlines"), (5, '"'), (7, 'say "hi"'),
    ]  # fmt: skip
    written = (volume / "out" / "part00001.csv").read_text()
    assert '7,"say ""hi"""\n' in written
    assert sorted((int(i), v) for i, v in csv.reader(io.StringIO(written, newline=""))) == expected
    back = "FROM VOLUME v (id BIGINT, v STRING) USING CSV OPTIONS('multiLine' = 'true')"
    assert sorted(rows(lake, f"SELECT id, v {back} SUBDIRECTORY 'out'")) == expected
