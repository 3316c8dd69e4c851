"""A failed CSV file's one line, without Spark: the bad row split as Spark splits it (RFC 4180
quotes, or the escape the COPY's OPTIONS name), and a hint when a quoted value spans lines."""

from __future__ import annotations

from lake_assets.core.entries import Column
from lake_assets.pipes.diagnose import first_problem
from lake_assets.volumes.grammar import VolumeSource

COLUMNS = (Column("id", "BIGINT"), Column("v", "STRING"))
SPANS_LINES = " (a quoted value that spans lines needs OPTIONS('multiLine' = 'true'))"


def problem(record: str, **options: str) -> str:
    return first_problem(VolumeSource("v", "CSV", options=options), COLUMNS, record)


def test_a_row_is_split_with_doubled_quotes_or_the_escape_the_options_name() -> None:
    assert problem('x,"say ""hi"", ok"') == "column id: 'x' is not a valid BIGINT"
    assert problem('1,"a\\",b"') == (
        f'the row has 3 fields but the table has 2 columns: 1,"a\\",b"{SPANS_LINES}'
    )
    assert problem('1,"a\\",b"', escape="\\") == 'malformed CSV row: 1,"a\\",b"'


def test_a_quote_left_open_by_a_line_break_says_how_to_read_values_that_span_lines() -> None:
    # What Spark reads of `1,"two\nlines",\n…` line by line: the second line starts in a quote.
    assert (
        problem('lines"')
        == f'the row has 1 fields but the table has 2 columns: lines"{SPANS_LINES}'
    )
    assert problem('lines",') == f"column id: 'lines\"' is not a valid BIGINT{SPANS_LINES}"
    assert (
        problem('lines"', multiline="true")
        == 'the row has 1 fields but the table has 2 columns: lines"'
    )
