"""Text that users wrote (comments, queries, file names, values, errors) shown as that very text:
in a terminal, its control characters as escapes, so that a value cannot rewrite the screen; in
Markdown (Dagster's UI renders descriptions as Markdown) escaped, so that a comment cannot make
every viewer fetch an image, follow a link or run a script."""

from __future__ import annotations

import re
import string

# Every ASCII punctuation character may be escaped in Markdown, and escaped, none starts a link,
# an image, a tag, an entity, emphasis, a heading or a list.
_PUNCTUATION = re.compile(f"([{re.escape(string.punctuation)}])")


def markdown_text(text: str) -> str:
    """`text` escaped so that Markdown renders it as written."""
    return _PUNCTUATION.sub(r"\\\1", text)


# Characters a terminal acts on rather than shows (controls, escape sequences, bidirectional
# overrides), as the escapes that name them: a value in a table must not rewrite the screen.
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
_NAMED = {"\0": "\\0", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(text: str) -> str:
    """Text for a terminal, its control characters written as escapes (`\\x1b`, `\\0`)."""
    return _INVISIBLE.sub(
        lambda m: _NAMED.get(m[0]) or m[0].encode("unicode_escape").decode(), text
    )
