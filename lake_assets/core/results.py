"""What a statement returns: a result set, a status message, or both."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Result:
    """Rows are streamed for queries; `message` is the status line of statements without rows."""

    columns: list[str] = field(default_factory=list)
    rows: Iterable[Sequence[Any]] = ()
    message: str | None = None

    @classmethod
    def status(cls, message: str) -> Result:
        return cls(message=message)

    @classmethod
    def properties(cls, **values: Any) -> Result:
        """A two-column property/value listing, as DESC of a volume, pipe or connection shows."""
        return cls(["property", "value"], list(values.items()))
