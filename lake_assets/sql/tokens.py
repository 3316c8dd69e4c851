"""A cursor over sqlglot's Spark tokens, with the few moves our DDL parser needs."""

from __future__ import annotations

import re
from typing import ClassVar, NoReturn

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from lake_assets.core.errors import LakeError
from lake_assets.core.names import checked_name
from lake_assets.sql.secrets import hidden

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LITERALS = (TokenType.STRING, TokenType.NUMBER, TokenType.IDENTIFIER)


class _Tokenizer(Spark.Tokenizer):
    """Spark's tokenizer, but SHOW …, EXECUTE …, EXPLAIN … and OPTIMIZE … are tokenized word by
    word, not as one raw command, so their statements parse from the same table of leading words
    as the others."""

    COMMANDS = Spark.Tokenizer.COMMANDS - {TokenType.SHOW, TokenType.EXECUTE}
    KEYWORDS: ClassVar[dict[str, TokenType]] = {
        **Spark.Tokenizer.KEYWORDS,
        "EXPLAIN": TokenType.VAR,
        "OPTIMIZE": TokenType.VAR,
    }


def tokenize(text: str) -> list[Token]:
    """Spark SQL tokens; comments are dropped, strings and quoted names kept whole."""
    try:
        return _Tokenizer().tokenize(text)
    except TokenError as error:
        problem = hidden(str(error), text)
    # The error quotes the text around where it stopped, perhaps a secret cut short: it is the
    # masked text's error that is shown.
    try:
        _Tokenizer().tokenize(hidden(text, text))
    except TokenError as error:
        problem = str(error)
    raise LakeError(
        f"cannot read the SQL text: {problem}",
        "close every quote (') and backquote (`) and every /* comment */",
    )


class TokenCursor:
    """Reads one statement's tokens left to right; errors quote the statement's usage line."""

    def __init__(self, tokens: list[Token], usage: str = "", text: str = "") -> None:
        self.tokens = tokens
        self.position = 0
        self.usage = usage
        self.text = text

    def peek(self, offset: int = 0) -> Token | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.position >= len(self.tokens)

    def word(self, offset: int = 0) -> str:
        """The upper-cased keyword at `offset`, or '' when that token is not a bare word."""
        token = self.peek(offset)
        if token is None or token.token_type in _LITERALS:
            return ""
        return token.text.upper()

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence if it comes next."""
        if all(self.word(offset) == word for offset, word in enumerate(words)):
            self.position += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            self.fail(" ".join(words))

    def identifier(self, what: str) -> str:
        token = self.peek()
        if token is not None and (
            token.token_type == TokenType.IDENTIFIER
            or (token.token_type not in _LITERALS and _IDENTIFIER.match(token.text))
        ):
            self.position += 1
            return token.text
        self.fail(what)

    def name(self, what: str) -> str:
        """An object name of any kind, checked once here (core.names.checked_name): backquotes
        may quote a reserved word but never widen the rule. Case-insensitive, so kept
        lower-case; schema-qualified names refused."""
        name = self.identifier(what)
        if self.accept_symbol(TokenType.DOT):
            raise LakeError(
                f"'{name}.' names a schema, and schemas are not supported yet",
                "use the object's bare name: every object lives in one schema",
            )
        return checked_name(name, what)

    def string(self, what: str) -> str:
        """A string literal; adjacent literals concatenate, as in Spark SQL."""
        parts: list[str] = []
        while (token := self.peek()) is not None and token.token_type == TokenType.STRING:
            parts.append(token.text)
            self.position += 1
        if not parts:
            self.fail(what)
        return "".join(parts)

    def integer(self, what: str) -> int:
        token = self.peek()
        if token is None or token.token_type != TokenType.NUMBER or not token.text.isdigit():
            self.fail(what)
        self.position += 1
        return int(token.text)

    def boolean(self, what: str) -> bool:
        if self.accept("TRUE"):
            return True
        if self.accept("FALSE"):
            return False
        self.fail(f"TRUE or FALSE for {what}")

    def setting(self, what: str) -> str:
        """The value of `KEY = value`: a string, a number, TRUE/FALSE or a bare word."""
        token = self.peek()
        if token is None or token.token_type in (TokenType.L_PAREN, TokenType.R_PAREN):
            self.fail(what)
        if token.token_type == TokenType.STRING:
            return self.string(what)
        self.position += 1
        return token.text.upper() if token.token_type != TokenType.NUMBER else token.text

    def group(self, allowed: tuple[str, ...]) -> dict[str, str]:
        """`(KEY = value, …)` with keys from `allowed`, as in DIRECTORY = (ENABLE = TRUE, …)."""
        self.expect_symbol(TokenType.L_PAREN, "(")
        found: dict[str, str] = {}
        while not self.accept_symbol(TokenType.R_PAREN):
            key = self.word()
            if key not in allowed:
                self.fail(" or ".join(allowed))
            self.position += 1
            self.expect_symbol(TokenType.EQ, "=")
            found[key] = self.setting(f"a value for {key}")
            self.accept_symbol(TokenType.COMMA)
        return found

    def properties(self) -> dict[str, str]:
        """`('key' = 'value', …)`; keys are case-insensitive."""
        self.expect_symbol(TokenType.L_PAREN, "(")
        found: dict[str, str] = {}
        while True:
            key = self.string("a quoted property name").lower()
            self.expect_symbol(TokenType.EQ, "=")
            found[key] = self.string("a quoted property value")
            if not self.accept_symbol(TokenType.COMMA):
                break
        self.expect_symbol(TokenType.R_PAREN, ")")
        return found

    def strings(self, what: str) -> tuple[str, ...]:
        """`('a', 'b', …)`."""
        self.expect_symbol(TokenType.L_PAREN, "(")
        values = [self.string(what)]
        while self.accept_symbol(TokenType.COMMA):
            values.append(self.string(what))
        self.expect_symbol(TokenType.R_PAREN, ")")
        return tuple(values)

    def accept_symbol(self, token_type: TokenType) -> bool:
        token = self.peek()
        if token is not None and token.token_type == token_type:
            self.position += 1
            return True
        return False

    def expect_symbol(self, token_type: TokenType, text: str) -> None:
        if not self.accept_symbol(token_type):
            self.fail(f"'{text}'")

    def parenthesized(self, what: str) -> str:
        """The text between a '(' and its matching ')', its nesting respected."""
        self.expect_symbol(TokenType.L_PAREN, what)
        open_token = self.tokens[self.position - 1]
        depth = 1
        while depth:
            token = self.peek()
            if token is None:
                self.fail(f"')' closing {what}")
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
            self.position += 1
        close = self.tokens[self.position - 1]
        return self.text[open_token.end + 1 : close.start]

    def expect_end(self) -> None:
        if not self.at_end():
            self.fail("the end of the statement")

    def fail(self, expected: str) -> NoReturn:
        token = self.peek()
        found = f"'{token.text}'" if token is not None else "the end of the statement"
        fix = f"write it as {self.usage}" if self.usage else "check the statement's syntax"
        raise LakeError(f"syntax error: expected {expected} but found {found}", fix)
