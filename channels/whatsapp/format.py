"""Markdown, as agents write it, rewritten in WhatsApp's own markup.

WhatsApp shows ``*bold*``, ``_italic_``, ``~strike~``, ```` ```code``` ```` and ```inline```, ``> quotes`` and
``-`` / ``1.`` lists; it has no headings, links with text or tables. So ``**bold**`` becomes ``*bold*``, a single
``*italic*`` becomes ``_italic_``, ``~~strike~~`` becomes ``~strike~``, a heading becomes a bold line and
``[text](url)`` becomes ``text (url)``. Code (fenced blocks and inline spans) is kept as written, marks and all.
"""

from __future__ import annotations

import re

__all__ = ["to_whatsapp"]

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)
_FENCE_LANG = re.compile(r"\A```[\w+-]*\n")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((\S+?)\)")
_BULLET = re.compile(r"^([ \t]*)[*+][ \t]+", re.MULTILINE)
_HOLD = "\x00{}\x00"


def to_whatsapp(markdown: str) -> str:
    """The text with Markdown's marks swapped for WhatsApp's; plain text comes back unchanged."""
    held: list[str] = []

    def hold(text: str) -> str:
        held.append(text)
        return _HOLD.format(len(held) - 1)

    def code(m: re.Match[str]) -> str:
        block = m.group(0)
        if block.startswith("```"):  # WhatsApp shows no language tag: drop it, keep the block
            block = _FENCE_LANG.sub("```\n", block)
        return hold(block)

    text = _CODE.sub(code, markdown.replace("\x00", ""))
    text = _HEADING.sub(lambda m: hold(f"*{m.group(1).strip('*')}*"), text)
    text = _BULLET.sub(r"\1- ", text)  # "* item" would read as the start of bold
    text = _BOLD.sub(lambda m: hold(f"*{m.group(1) or m.group(2)}*"), text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})", text)
    while "\x00" in text:  # held pieces may hold others (a bold heading): undo until none is left
        text = re.sub(r"\x00(\d+)\x00", lambda m: held[int(m.group(1))], text)
    return text
