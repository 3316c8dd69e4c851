"""Rendering results as an aligned table, JSON Lines, or CSV."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from decimal import Decimal

import pytest

from lake_assets.core.results import Result
from lake_assets.output import FORMATS, write_result

COLUMNS = ["id", "product", "amount", "dt", "paid"]
ROWS = [
    (1, "Laptop", Decimal("8999.00"), date(2024, 1, 2), True),
    (22, None, Decimal("0.50"), datetime(2024, 1, 2, 3, 4, 5), False),
]


def render(result: Result, fmt: str) -> str:
    out = io.StringIO()
    write_result(result, fmt, out)
    return out.getvalue()


def sales() -> Result:
    return Result(list(COLUMNS), list(ROWS))


def test_the_formats():
    assert FORMATS == ("table", "json", "csv")


# JSON Lines


def test_json_is_one_object_per_row():
    lines = render(sales(), "json").splitlines()
    assert len(lines) == 2
    assert [list(json.loads(line)) for line in lines] == [COLUMNS, COLUMNS]


def test_json_prints_decimals_exactly():
    text = render(sales(), "json")
    assert text.splitlines()[0] == (
        '{"id":1,"product":"Laptop","amount":8999.00,"dt":"2024-01-02","paid":true}'
    )
    amount = json.loads(text.splitlines()[0], parse_float=Decimal)["amount"]
    assert amount == Decimal("8999.00")
    assert str(amount) == "8999.00"


def test_json_decimals_are_numbers_not_strings():
    assert json.loads(render(sales(), "json").splitlines()[0])["amount"] == 8999.0


def test_json_writes_none_as_null_and_datetimes_as_iso_strings():
    line = render(sales(), "json").splitlines()[1]
    assert line == (
        '{"id":22,"product":null,"amount":0.50,"dt":"2024-01-02T03:04:05","paid":false}'
    )
    assert json.loads(line)["product"] is None


def test_json_keeps_decimals_exact_inside_nested_values():
    result = Result(["m", "a"], [({"k": Decimal("1.10")}, [Decimal("2.500"), None])])
    line = render(result, "json")
    assert line == '{"m":{"k":1.10},"a":[2.500,null]}\n'
    assert json.loads(line, parse_float=Decimal) == {
        "m": {"k": Decimal("1.10")},
        "a": [Decimal("2.500"), None],
    }


def test_json_quotes_special_decimals_and_hex_encodes_bytes():
    result = Result(["d", "b"], [(Decimal("NaN"), b"\x00\xff")])
    assert render(result, "json") == '{"d":"NaN","b":"00ff"}\n'


def test_json_escapes_strings_and_names():
    result = Result(['say "hi"'], [('a "quoted"\nline',)])
    line = render(result, "json")
    assert json.loads(line) == {'say "hi"': 'a "quoted"\nline'}


def test_json_of_no_rows_is_empty():
    assert render(Result(["a"], []), "json") == ""


# Aligned table


def test_table_is_aligned_with_a_row_count_footer():
    assert render(sales(), "table") == (
        "id | product | amount  | dt                  | paid\n"
        "---+---------+---------+---------------------+------\n"
        "1  | Laptop  | 8999.00 | 2024-01-02          | true\n"
        "22 | NULL    | 0.50    | 2024-01-02 03:04:05 | false\n"
        "(2 rows)\n"
    )


def test_table_footer_says_row_for_one_row():
    assert render(Result(["n"], [(7,)]), "table") == "n\n-\n7\n(1 row)\n"


def test_table_of_no_rows_still_shows_the_header():
    assert render(Result(["name", "kind"], []), "table") == "name | kind\n-----+-----\n(0 rows)\n"


def test_table_reads_rows_from_an_iterator():
    result = Result(["n"], iter([(1,), (2,)]))
    assert render(result, "table") == "n\n-\n1\n2\n(2 rows)\n"


def test_table_prints_rows_and_then_a_message_when_both_are_given():
    result = Result(["n"], [(1,)], message="done")
    assert render(result, "table") == "n\n-\n1\n(1 row)\ndone\n"


# CSV


def test_csv_has_a_header_row_and_empty_fields_for_null():
    assert render(sales(), "csv") == (
        "id,product,amount,dt,paid\n"
        "1,Laptop,8999.00,2024-01-02,true\n"
        "22,,0.50,2024-01-02 03:04:05,false\n"
    )


def test_csv_quotes_fields_with_commas_and_quotes():
    result = Result(["name", "note"], [("a,b", 'say "x"')])
    text = render(result, "csv")
    assert text == 'name,note\n"a,b","say ""x"""\n'
    assert list(csv.reader(io.StringIO(text))) == [["name", "note"], ["a,b", 'say "x"']]


def test_csv_of_no_rows_is_just_the_header():
    assert render(Result(["a", "b"], []), "csv") == "a,b\n"


# Status messages


def test_status_is_printed_in_table_format():
    assert render(Result.status("created table sales"), "table") == "created table sales\n"


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_status_prints_nothing_in_machine_formats(fmt):
    assert render(Result.status("created table sales"), fmt) == ""


def _refuse(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_json_of_special_doubles_is_valid_json(value):
    json.loads(render(Result(["x"], [(value,)]), "json"), parse_constant=_refuse)


# Terminal safety: control characters are shown, not acted on


HOSTILE = "ok\x1b[2J\x1b]0;pwned\x07\0end\u202e\n"


def test_table_shows_control_characters_as_escapes_in_values_names_and_messages():
    text = render(Result([f"c{HOSTILE}"], [(HOSTILE,)], message=f"done {HOSTILE}"), "table")
    assert not set(text) & {"\x1b", "\x07", "\0", "\u202e"}
    assert "ok\\x1b[2J\\x1b]0;pwned\\x07\\0end\\u202e\\n" in text
    assert text.count("\n") == 5  # header, rule, the row, the footer and the message


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_machine_formats_keep_values_exact(fmt):
    text = render(Result(["c"], [(HOSTILE,)]), fmt)
    value = json.loads(text)["c"] if fmt == "json" else list(csv.reader(io.StringIO(text)))[1][0]
    assert value == HOSTILE
