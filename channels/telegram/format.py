"""Markdown, as agents write it, rendered to the small HTML subset Telegram understands.

Agents answer in Markdown; sent as plain text, Telegram would show the asterisks and backticks.
Telegram's HTML mode knows only ``b i s u a code pre blockquote`` (and a few more), so this is
not a general Markdown renderer: markdown-it-py parses (CommonMark plus strikethrough, raw HTML
off), and the token stream is written out with those tags, everything else as escaped text.
Lists become "•"/"1." lines, headings bold lines, tables stay as the text they were written as.

The visible text is never longer than the Markdown it came from, so a chunk split at Telegram's
4096-character limit before rendering still fits after it.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["to_html"]

_PARSER = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")
_INLINE_TAGS = {"strong": "b", "em": "i", "s": "s"}
_SAFE_LINK = re.compile(r"^(https?|tg|mailto):", re.IGNORECASE)


def to_html(markdown: str) -> str:
    """Telegram HTML (``parse_mode="HTML"``) for ``markdown``."""
    out: list[str] = []
    lists: list[list[int]] = []  # per open list: [next number] for ordered, [] for bullets
    for tok in _PARSER.parse(markdown):
        kind = tok.type
        if kind == "inline":
            out.append(_inline(tok.children or []))
        elif kind == "paragraph_close" or kind == "heading_close":
            if kind == "heading_close":
                out.append("</b>")
            out.append("\n" if tok.hidden else "\n\n")  # hidden: a paragraph of a tight list item
        elif kind == "heading_open":
            out.append("<b>")
        elif kind in ("bullet_list_open", "ordered_list_open"):
            lists.append([int(tok.attrGet("start") or 1)] if kind == "ordered_list_open" else [])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                out.append("\n")
        elif kind == "list_item_open":
            indent = "  " * (len(lists) - 1)
            current = lists[-1] if lists else []
            if current:
                out.append(f"{indent}{current[0]}. ")
                current[0] += 1
            else:
                out.append(f"{indent}• ")
        elif kind in ("fence", "code_block"):
            lang = (tok.info or "").split(maxsplit=1)[0] if kind == "fence" else ""
            attr = f' class="language-{html.escape(lang)}"' if lang else ""
            out.append(f"<pre><code{attr}>{html.escape(tok.content.rstrip(chr(10)), quote=False)}</code></pre>\n\n")
        elif kind == "blockquote_open":
            out.append("<blockquote>")
        elif kind == "blockquote_close":
            out.append("</blockquote>\n\n")
        elif kind == "hr":
            out.append("———\n\n")
    text = "".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return re.sub(r"\s+</blockquote>", "</blockquote>", text).strip()


def _inline(children: list[Token]) -> str:
    out: list[str] = []
    links: list[bool] = []  # per open link: whether an <a> was written (unsafe targets stay plain text)
    for tok in children:
        kind = tok.type
        if kind == "text":
            out.append(html.escape(tok.content, quote=False))
        elif kind == "code_inline":
            out.append(f"<code>{html.escape(tok.content, quote=False)}</code>")
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind.endswith("_open") and kind[:-5] in _INLINE_TAGS:
            out.append(f"<{_INLINE_TAGS[kind[:-5]]}>")
        elif kind.endswith("_close") and kind[:-6] in _INLINE_TAGS:
            out.append(f"</{_INLINE_TAGS[kind[:-6]]}>")
        elif kind == "link_open":
            href = str(tok.attrGet("href") or "")
            safe = bool(_SAFE_LINK.match(href))
            links.append(safe)
            if safe:
                out.append(f'<a href="{html.escape(href)}">')
        elif kind == "link_close":
            if links.pop():
                out.append("</a>")
        elif kind == "image":
            src = str(tok.attrGet("src") or "")
            alt = html.escape(tok.content or "image", quote=False)
            out.append(f'<a href="{html.escape(src)}">{alt}</a>' if _SAFE_LINK.match(src) else alt)
        else:  # anything new markdown-it may emit: its source text, escaped
            out.append(html.escape(tok.content, quote=False))
    return "".join(out)
