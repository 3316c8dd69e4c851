"""Secret values in SQL text, found once so that no error message echoes one: a connection's keys,
a Kafka client's passwords and the user info of a URL."""

from __future__ import annotations

import re

REDACTED = "****"
# Settings whose values are secrets (Kafka's `sasl.password`, `ssl.key.password`, …).
SECRET_MARKERS = ("password", "secret", "jaas", "token", "credential")
# A quoted value, closed or not (an error may quote a statement whose quote is never closed).
_VALUE = r"""(?P<quote>['"])(?P<value>(?:\\.|(?!(?P=quote)).)*)(?:(?P=quote)|\Z)"""
_MARKER = "|".join(SECRET_MARKERS)
_SECRETS = (
    # ACCESS_ID = '…', ACCESS_KEY '…', and any setting whose name says it is a secret.
    re.compile(
        rf"(?<![\w.'\"])(?:ACCESS_ID|ACCESS_KEY|\w*(?:{_MARKER})\w*)[\s=]*{_VALUE}", re.I | re.S
    ),
    # 'sasl.password', '…' in a map(…) and 'some.secret' = '…' in OPTIONS(…).
    re.compile(rf"""['"][^'"]*(?:{_MARKER})[^'"]*['"][\s,=]*{_VALUE}""", re.I | re.S),
)
# The user info of a URL: scheme://id:key@host.
_USER_INFO = re.compile(r"(?P<scheme>\w+://)[^/@\s'\"]+@")


def is_secret(key: str) -> bool:
    """Whether a setting's name says its value is a secret."""
    return any(marker in key.lower() for marker in SECRET_MARKERS)


def secret_values(text: str) -> set[str]:
    """The secret values a SQL text holds, as written."""
    return {
        found.group("value")
        for pattern in _SECRETS
        for found in pattern.finditer(text)
        if found.group("value")
    }


def hidden(message: str, text: str) -> str:
    """An error message about a SQL text (or the text itself), with every secret value of the
    text and every URL's user info replaced by `****`."""
    for value in sorted(secret_values(text), key=len, reverse=True):
        message = message.replace(value, REDACTED)
    return _USER_INFO.sub(rf"\g<scheme>{REDACTED}@", message)
