"""Markdown, as agents write it, turned into Slack's ``mrkdwn`` (which is not Markdown).

Slack marks bold with single asterisks, italics with underscores, strikethrough with single tildes and links as
``<url|text>``; it has no headings, and ``&``, ``<``, ``>`` must be escaped or they are read as markup (an agent
could otherwise write ``<!channel>`` and ping everyone). Code spans and blocks are kept as they are (escaped
only), since Slack shows backticks the same way Markdown does.
"""

from __future__ import annotations

import re

__all__ = ["to_mrkdwn"]

_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![\w*])")
_STRIKE = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.MULTILINE)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _prose(text: str) -> str:
    links: list[str] = []

    def keep_link(m: re.Match[str]) -> str:
        links.append(f"<{m.group(2)}|{_escape(m.group(1)).replace('|', '¦')}>")
        return f"\x00{len(links) - 1}\x00"

    text = _escape(_LINK.sub(keep_link, text))
    text = _HEADING.sub(lambda m: f"\x01{m.group(1)}\x01", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _ITALIC.sub(lambda m: f"_{m.group(1)}_", text)
    text = _BOLD.sub(lambda m: f"\x01{m.group(1) or m.group(2)}\x01", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    text = text.replace("\x01", "*")
    return re.sub(r"\x00(\d+)\x00", lambda m: links[int(m.group(1))], text)


def to_mrkdwn(markdown: str) -> str:
    """The mrkdwn for ``markdown``: prose converted, code kept verbatim (escaped)."""
    out: list[str] = []
    pos = 0
    for m in _CODE.finditer(markdown):
        out.append(_prose(markdown[pos : m.start()]))
        code = m.group(0)
        if code.startswith("```"):  # a language tag after the fence shows as text in Slack: drop it
            code = re.sub(r"\A```[\w+-]*\n", "```\n", code)
        out.append(_escape(code))
        pos = m.end()
    out.append(_prose(markdown[pos:]))
    return "".join(out)
