"""Column types of the seed's CREATE TABLE, mapped onto Spark SQL type names."""

from __future__ import annotations

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
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
