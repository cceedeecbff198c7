"""Markdown, as agents write it, rendered to the HTML Matrix clients show (``formatted_body``).

Matrix's ``org.matrix.custom.html`` format takes ordinary HTML (a safe subset: clients strip the rest), so a
CommonMark renderer does it: markdown-it-py with raw HTML off (an agent's ``<script>`` stays text),
strikethrough and tables on. The plain ``body`` keeps the Markdown as written, for clients without HTML.
"""

from __future__ import annotations

from markdown_it import MarkdownIt

__all__ = ["to_html"]

_PARSER = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"])


def to_html(markdown: str) -> str | None:
    """The HTML for ``markdown``; None when it is plain text (one paragraph, no markup), sent without HTML."""
    rendered = _PARSER.render(markdown).strip()
    inner = rendered.removeprefix("<p>").removesuffix("</p>")
    if rendered.startswith("<p>") and "<" not in inner and inner == markdown.strip():
        return None
    return rendered
