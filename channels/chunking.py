"""Splitting long text into pieces a channel accepts (Telegram 4096 characters, Discord 2000).

One shared splitter so the agents' replies and the ``message.*`` methods cut text the same way:
at a paragraph break if one is in the second half of the window, else a line break, else a space,
else a hard cut. Code fences that a cut would leave open are closed and reopened in the next piece,
so Markdown-rendering clients still show the code as code.
"""

from __future__ import annotations

__all__ = ["split_text"]

_FENCE = "```"


def _cut_point(text: str, limit: int) -> int:
    floor = limit // 2
    for sep in ("\n\n", "\n", " "):
        at = text.rfind(sep, floor, limit + 1)
        if at > 0:
            return at
    return limit


def split_text(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters (whitespace at cuts is dropped).

    Args:
        text: the whole message.
        limit: the channel's maximum message length (``Channel.text_limit``).

    Returns:
        At least one piece; an empty ``text`` gives ``[""]``.
    """
    if limit < 16:
        raise ValueError("limit must be at least 16 characters")
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    rest = text
    reopen = ""
    while rest:
        rest = reopen + rest
        if len(rest) <= limit:
            pieces.append(rest)
            break
        # Keep room to close a fence left open by this cut.
        window = limit - (len(_FENCE) + 1)
        at = _cut_point(rest, window)
        piece, rest = rest[:at].rstrip(), rest[at:].lstrip()
        if piece.count(_FENCE) % 2 == 1:
            # Reopen with the same info string (e.g. ```python) so highlighting survives the cut.
            opener = piece[piece.rfind(_FENCE):].split("\n", 1)[0]
            piece += "\n" + _FENCE
            reopen = opener + "\n"
        else:
            reopen = ""
        if piece:
            pieces.append(piece)
    return pieces
