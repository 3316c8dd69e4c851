"""Users' text renders as that text in Markdown: no image fetched, no link, no tag, no format."""

from __future__ import annotations

import html

import pytest
from markdown_it import MarkdownIt

from lake_assets.core.rendering import markdown_text

HOSTILE = [
    "<img src=http://127.0.0.1:9/x.png>",
    "[click](javascript:alert(1)) and ![pixel](http://127.0.0.1:9/p.png)",
    "<http://127.0.0.1:9/> **bold** _em_ `code` &amp; \\* ~~gone~~ | a | b |",
    "# heading\n- item\n1. number\n> quote\n---",
    "plain words, 3.5 % off: sales per day",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_renders_as_the_text_itself(text: str) -> None:
    rendered = (
        MarkdownIt("commonmark").enable("table").enable("strikethrough").render(markdown_text(text))
    )
    assert rendered.startswith("<p>")
    assert rendered.endswith("</p>\n")
    inner = rendered.removeprefix("<p>").removesuffix("</p>\n")
    assert "<" not in inner.replace("<br />", "")  # no element but the paragraph
    assert html.unescape(inner) == text
