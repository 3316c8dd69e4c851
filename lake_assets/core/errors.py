"""The one error type users see: what went wrong and how to fix it."""

from __future__ import annotations

# The fix of a failure only Spark's own error explains, said so that it holds wherever it is read:
# `lake sql`, the Python API (the cause is chained) and a Dagster run's log.
SEE_THE_CAUSE = "Spark's full error is this error's cause (lake sql --debug prints it)"


class LakeError(Exception):
    """A user-facing failure; its text is `<what> — <how to fix>` on one line."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(f"{what} — {fix}")
        self.what = what
        self.fix = fix

    def __reduce__(self) -> tuple[type[LakeError], tuple[str, str]]:
        return (type(self), (self.what, self.fix))
