"""Which functions a condition that judges a row, or a dynamic table kept incrementally, may
not call: those whose value is not decided by their arguments."""

from __future__ import annotations

from sqlglot import exp

from lake_assets.sql.determinism import NON_DETERMINISTIC, non_deterministic

# sqlglot's names for functions of the clock, the session and random values.
_NON_DETERMINISTIC_PREFIXES = (
    "AI_", "CURRENT_", "LOCALTIME", "RAND", "SEQ", "SESSION_", "SYS", "UTC_", "UUID",
)  # fmt: skip


def _functions(kind: type[exp.Func] = exp.Func) -> list[type[exp.Func]]:
    """Every class of function sqlglot has, at any depth."""
    return [c for sub in kind.__subclasses__() for c in [sub, *_functions(sub)]]


def test_every_sqlglot_function_of_the_clock_the_session_or_chance_is_non_deterministic() -> None:
    named = {
        kind.__name__
        for kind in _functions()
        if any(name.startswith(_NON_DETERMINISTIC_PREFIXES) for name in kind.sql_names())
    }
    assert len(named) > 40
    assert named <= {kind.__name__ for kind in NON_DETERMINISTIC}


def test_an_anonymous_call_of_spark_s_clock_or_chance_is_non_deterministic() -> None:
    assert non_deterministic(exp.Anonymous(this="monotonically_increasing_id"))
    assert not non_deterministic(exp.Anonymous(this="upper"))
