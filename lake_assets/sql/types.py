"""Column types of the dialect's CREATE TABLE, mapped onto Spark SQL type names; Spark's types
written back as SQL, and the form in which values of any type compare."""

from __future__ import annotations

from pyspark.sql.types import ArrayType, DataType, MapType, StructType
from sqlglot.tokens import TokenType

from lake_assets.core.delta import quote_name
from lake_assets.core.errors import LakeError
from lake_assets.core.names import hidden
from lake_assets.sql.tokens import TokenCursor

_SIMPLE_TYPES = {
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "BOOLEAN": "BOOLEAN",
    "STRING": "STRING",
    "BINARY": "BINARY",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP",
    "TIMESTAMP_NTZ": "TIMESTAMP_NTZ",
}
SUPPORTED = (
    "INT, BIGINT, SMALLINT, TINYINT, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n), BOOLEAN, "
    "DOUBLE, FLOAT, DATE, TIMESTAMP, TIMESTAMP_NTZ, BINARY"
)
MAX_DECIMAL_PRECISION = 38


def parse_column_type(cursor: TokenCursor, column: str) -> str:
    """Read one column type and return its Spark SQL spelling."""
    word = cursor.word()
    if word in _SIMPLE_TYPES:
        cursor.position += 1
        return _SIMPLE_TYPES[word]
    if word in ("DECIMAL", "NUMERIC", "DEC"):
        cursor.position += 1
        return _decimal(cursor, column)
    if word in ("VARCHAR", "CHAR"):
        cursor.position += 1
        if not cursor.accept_symbol(TokenType.L_PAREN):
            if word == "CHAR":
                return "CHAR(1)"
            return "STRING"
        length = cursor.integer("a length")
        cursor.expect_symbol(TokenType.R_PAREN, ")")
        if length < 1:
            raise LakeError(
                f"column {column}: {word} length must be at least 1", "use e.g. VARCHAR(64)"
            )
        return f"{word}({length})"
    token = cursor.peek()
    found = token.text if token is not None else "nothing"
    raise LakeError(
        f"column {column}: unsupported type {found}",
        f"use one of {SUPPORTED}",
    )


def _decimal(cursor: TokenCursor, column: str) -> str:
    if not cursor.accept_symbol(TokenType.L_PAREN):
        return "DECIMAL(10,0)"
    precision = cursor.integer("a precision")
    scale = cursor.integer("a scale") if cursor.accept_symbol(TokenType.COMMA) else 0
    cursor.expect_symbol(TokenType.R_PAREN, ")")
    if not 1 <= precision <= MAX_DECIMAL_PRECISION or scale > precision:
        raise LakeError(
            f"column {column}: DECIMAL({precision},{scale}) is out of range",
            f"use a precision from 1 to {MAX_DECIMAL_PRECISION} and a scale no larger than it",
        )
    return f"DECIMAL({precision},{scale})"


def type_text(data_type: DataType) -> str:
    """A Spark type as CREATE TABLE reads it back: keywords upper-cased, but a STRUCT's field
    names quoted exactly as the query wrote them (`simpleString().upper()` renamed them)."""
    if isinstance(data_type, StructType):
        fields = ",".join(f"{quote_name(f.name)}:{type_text(f.dataType)}" for f in data_type.fields)
        return f"STRUCT<{fields}>"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{type_text(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{type_text(data_type.keyType)},{type_text(data_type.valueType)}>"
    return data_type.simpleString().upper()


def holds_map(data_type: DataType) -> bool:
    """Whether a value of this type is or contains a MAP, which Spark cannot compare."""
    if isinstance(data_type, MapType):
        return True
    if isinstance(data_type, ArrayType):
        return holds_map(data_type.elementType)
    if isinstance(data_type, StructType):
        return any(holds_map(f.dataType) for f in data_type.fields)
    return False


def comparable(value: str, data_type: DataType, depth: int = 0) -> str:
    """SQL for `value` (SQL of type `data_type`) that `<=>` and joins can compare: Spark cannot
    compare MAPs and a map's entries have no fixed order, so every map in the value, however
    nested, becomes the array of its entries sorted by key (keys cannot hold maps)."""
    if not holds_map(data_type):
        return value
    element = hidden(f"e{depth}")
    if isinstance(data_type, MapType):
        if not holds_map(data_type.valueType):
            return f"array_sort(map_entries({value}))"
        entry_value = comparable(f"{element}.value", data_type.valueType, depth + 1)
        entry = f"struct({element}.key, {entry_value})"
        return f"array_sort(transform(map_entries({value}), {element} -> {entry}))"
    if isinstance(data_type, ArrayType):
        item = comparable(element, data_type.elementType, depth + 1)
        return f"transform({value}, {element} -> {item})"
    assert isinstance(data_type, StructType)
    fields = ", ".join(
        comparable(f"{value}.{quote_name(f.name)}", f.dataType, depth) for f in data_type.fields
    )
    return f"IF({value} IS NULL, NULL, struct({fields}))"


def same(left: str, right: str, data_type: DataType) -> str:
    """`left <=> right` for two values of `data_type`, maps included."""
    return f"{comparable(left, data_type)} <=> {comparable(right, data_type)}"
