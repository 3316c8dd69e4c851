"""Text that users wrote (comments, queries, file names, errors) as Markdown that renders as that
very text: Dagster's UI renders descriptions as Markdown, and a comment must not make every viewer
fetch an image, follow a link or run a script."""

from __future__ import annotations

import re
import string

# Every ASCII punctuation character may be escaped in Markdown, and escaped, none starts a link,
# an image, a tag, an entity, emphasis, a heading or a list.
_PUNCTUATION = re.compile(f"([{re.escape(string.punctuation)}])")


def markdown_text(text: str) -> str:
    """`text` escaped so that Markdown renders it as written."""
    return _PUNCTUATION.sub(r"\\\1", text)
