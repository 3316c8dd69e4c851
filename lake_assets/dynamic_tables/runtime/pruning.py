"""Value ranges that let a refresh's MERGE skip the dynamic table's files it cannot touch.

Delta prunes a MERGE's target files only by predicates on the target alone, using each file's
min/max statistics. A refresh knows the values its changed rows hold in one column, so it adds
those values as a few ranges to the MERGE's ON clause (and to any read of the table it does
before). When the table's files are laid out along that column, as a projection's are when its
source is appended in that order, a small change then reads a few files, not all of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DateType, DecimalType, IntegralType, StructField

from lake_assets.core.delta import quote_name

# A source is read only in the ranges of a change's keys from this many rows (the catalog's
# count): the ranges cost two small Spark jobs, which a table of a few files does not win back.
RESTRICT_MIN_ROWS = 100_000
# At most this many ranges in the predicate.
_MAX_RANGES = 32
# The changed values are first gathered into this many equal-width buckets (one Spark job).
_BUCKETS = 1024
# Rows per file of a FULL write: the unit a pruned MERGE reads and rewrites.
ROWS_PER_FILE = 500_000

Bound = int | Decimal | date


@dataclass(frozen=True)
class Ranges:
    """Every changed row's value of `column` lies in one of `bounds`, or is NULL if `nulls`."""

    column: str
    data_type: DataType
    bounds: tuple[tuple[Bound, Bound], ...]
    nulls: bool

    def sql(self, alias: str | None = None) -> str:
        """The predicate on `alias`.column (a bare column without alias)."""
        target = f"{alias}.{quote_name(self.column)}" if alias else quote_name(self.column)
        kind = self.data_type.simpleString()
        parts = [
            f"{target} BETWEEN CAST('{low}' AS {kind}) AND CAST('{high}' AS {kind})"
            for low, high in self.bounds
        ]
        if self.nulls:
            parts.append(f"{target} IS NULL")
        return f"({' OR '.join(parts)})"


def restricted(rows: int | None) -> bool:
    """Whether a source of `rows` rows is read only in the ranges of a change's keys."""
    return (rows or 0) >= RESTRICT_MIN_ROWS


def _prunable(field: StructField) -> bool:
    """Columns whose ranges Delta's statistics can compare exactly."""
    return isinstance(field.dataType, IntegralType | DecimalType | DateType)


def ranges(changed: DataFrame, fields: list[StructField]) -> Ranges | None:
    """Ranges of the first prunable column of `fields` holding every row of `changed`."""
    field = next((f for f in fields if _prunable(f)), None)
    if field is None:
        return None
    value = F.col(quote_name(field.name))
    ordinal = F.unix_date(value) if isinstance(field.dataType, DateType) else value.cast("double")
    low, high, nulls = changed.agg(
        F.min(ordinal), F.max(ordinal), F.max(value.isNull().cast("int"))
    ).collect()[0]
    if low is None:
        return Ranges(field.name, field.dataType, (), bool(nulls))
    width = (high - low) / _BUCKETS or 1.0
    buckets = (
        changed.where(value.isNotNull())
        .groupBy(F.floor((ordinal - low) / width).alias("bucket"))
        .agg(F.min(value), F.max(value), F.min(ordinal), F.max(ordinal))
        .orderBy("bucket")
        .collect()
    )
    # A gap is an empty bucket or more between two changed values; the widest become cuts.
    gaps = sorted(
        (i for i in range(1, len(buckets)) if buckets[i][0] - buckets[i - 1][0] > 1),
        key=lambda i: buckets[i][3] - buckets[i - 1][4],
        reverse=True,
    )
    cuts = [*sorted(gaps[: _MAX_RANGES - 1]), len(buckets)]
    bounds, start = [], 0
    for cut in cuts:
        bounds.append((buckets[start][1], buckets[cut - 1][2]))
        start = cut
    return Ranges(field.name, field.dataType, tuple(bounds), bool(nulls))
