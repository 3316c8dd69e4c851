"""CREATE STORAGE CONNECTION."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.tokens import TokenType

from lake_assets.core.errors import LakeError
from lake_assets.sql.grammar import Grammar, ObjectWords, StatementParser, finished
from lake_assets.sql.statements import Statement
from lake_assets.sql.tokens import TokenCursor

CREATE_CONNECTION = (
    "CREATE STORAGE CONNECTION [IF NOT EXISTS] c TYPE OSS|COS|S3|LOCAL ENDPOINT = '…' "
    "ACCESS_ID = '…' ACCESS_KEY = '…' [REGION = '…'] [ROLE_ARN = '…']"
)
CONNECTION_TYPES = ("OSS", "COS", "S3", "LOCAL")
_SETTINGS = ("TYPE", "ENDPOINT", "ACCESS_ID", "ACCESS_KEY", "REGION", "ROLE_ARN")
WORDS = ObjectWords("connection", (("STORAGE", "CONNECTION"), ("CONNECTION",)))


@dataclass(frozen=True)
class CreateConnection(Statement):
    name: str
    type: str
    endpoint: str | None = None
    access_id: str | None = None
    access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None
    if_not_exists: bool = False


def parse_create_connection(cursor: TokenCursor, grammar: Grammar) -> Statement:
    cursor.usage = CREATE_CONNECTION
    cursor.expect("CREATE", "STORAGE", "CONNECTION")
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    name = cursor.name("a connection name")
    settings: dict[str, str] = {}
    while not cursor.at_end():
        key = cursor.word()
        if key not in _SETTINGS:
            cursor.fail("TYPE, ENDPOINT, ACCESS_ID, ACCESS_KEY, REGION or ROLE_ARN")
        cursor.position += 1
        cursor.accept_symbol(TokenType.EQ)
        settings[key] = cursor.setting(f"a value for {key}")
    connection_type = settings.get("TYPE", "").upper()
    if connection_type not in CONNECTION_TYPES:
        raise LakeError(
            f"storage connection {name} needs TYPE OSS, COS, S3 or LOCAL",
            f"write it as {CREATE_CONNECTION}",
        )
    return finished(
        cursor,
        CreateConnection(
            name,
            connection_type,
            settings.get("ENDPOINT"),
            settings.get("ACCESS_ID"),
            settings.get("ACCESS_KEY"),
            settings.get("REGION"),
            settings.get("ROLE_ARN"),
            if_not_exists,
        ),
    )


STATEMENTS: dict[tuple[str, ...], StatementParser] = {
    ("CREATE", "STORAGE", "CONNECTION"): parse_create_connection,
}
