"""Reaction buttons: Matrix has no buttons, so a choice (an approval, a question) is offered as reactions.

``offer`` sends the text with its options listed, then reacts to it with one key per option; a reaction with one
of those keys from someone else (``picked``), or a reply to the message with an option's number (``typed_pick``),
comes in as that person typing the option's data. Which message offers which keys is kept in ``choices.json``
(the latest ``CHOICES_KEPT``), so a restart does not forget them; ``settle`` (after the edit that settles the
message) takes the bot's keys off it.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import structlog

from channels.base import ChannelError, Sent
from channels.matrix.outbound import Outbound
from channels.matrix.state import StateFiles

__all__ = ["CHOICES_KEPT", "KEYCAPS", "Choices", "bare", "choice_hint", "choice_keys"]

log = structlog.get_logger("channels.matrix")

KEYCAPS = ("1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟")
"""Reaction keys for options whose labels do not start with an emoji of their own."""
CHOICES_KEPT = 200
"""Messages with open choices remembered (the oldest forgotten first): far more than requests ever pending."""


def bare(key: str) -> str:
    """A reaction key without emoji presentation selectors: clients differ on sending ``U+FE0F``."""
    return key.replace("\ufe0f", "").strip()


def choice_keys(buttons: list[tuple[str, str]]) -> list[str] | None:
    """One reaction key per option: the labels' own leading emoji when each has a different one (an approval's
    ✅ ♾️ ⛔), else keycap numbers; None for more options than there are keycaps."""
    heads = [label.split(maxsplit=1)[0] if len(label.split(maxsplit=1)) == 2 else "" for label, _ in buttons]
    if all(h and unicodedata.category(h[0]) == "So" for h in heads) and len({bare(h) for h in heads}) == len(heads):
        return heads
    return list(KEYCAPS[: len(buttons)]) if len(buttons) <= len(KEYCAPS) else None


def choice_hint(buttons: list[tuple[str, str]], keys: list[str]) -> str:
    """The line under the options saying how to pick one (the typed answers the text already gives still work)."""
    options = " · ".join(
        f"{key} {label.split(maxsplit=1)[1] if label.startswith(key) else label}"
        for key, (label, _) in zip(keys, buttons, strict=True)
    )
    span = "1" if len(keys) == 1 else f"a number from 1 to {len(keys)}"
    return f"React with {options} (or reply to this message with {span})."


class Choices:
    """The open choices of one account, remembered in its state dir."""

    def __init__(self, account_id: str, files: StateFiles, outbound: Outbound) -> None:
        self.account_id = account_id
        self._files = files
        self._out = outbound
        self.open: dict[str, dict[str, Any]] = {}
        """Event id of a message with open choices -> its room, thread, ``keys`` (key -> data) and ``mine`` (the
        bot's reaction event ids, taken off when it is settled); saved in ``choices.json``."""

    def load(self) -> None:
        """The open choices saved before a restart (none when the file is missing or not ours)."""
        try:
            saved = json.loads(self._files.load("choices.json") or "{}")
        except ValueError:
            saved = {}
        if not isinstance(saved, dict):
            saved = {}
        self.open = {k: v for k, v in saved.items() if isinstance(v, dict) and isinstance(v.get("keys"), dict)}

    def save(self) -> None:
        while len(self.open) > CHOICES_KEPT:
            del self.open[next(iter(self.open))]
        try:
            self._files.save("choices.json", json.dumps(self.open))
        except OSError as exc:  # kept in memory still: only a restart would forget them
            log.warning("matrix choices not saved", account=self.account_id, error=str(exc))

    async def offer(
        self, to: str, text: str, buttons: list[tuple[str, str]], *, thread_id: str | None = None
    ) -> Sent | None:
        """The text with a line naming a reaction key per option, then the bot's own reactions with those keys,
        so picking one is a click on an existing reaction. None past ten options (the caller sends the text)."""
        keys = choice_keys(buttons)
        if not buttons or keys is None:
            return None
        body = f"{text}\n\n{choice_hint(buttons, keys)}"
        if len(body) > self._out.text_limit:
            return None
        sent = await self._out.send(to, body, thread_id=thread_id)
        entry: dict[str, Any] = {
            "room": sent.chat_id,
            "thread": thread_id,
            "keys": {key: data for key, (_label, data) in zip(keys, buttons, strict=True)},
            "mine": [],
        }
        self.open[sent.message_id] = entry  # before the reactions: a quick person may beat the bot to them
        for key in keys:
            try:
                reaction = await self._out.react(sent.chat_id, sent.message_id, key)
            except ChannelError as exc:  # the keys can still be typed, or reacted with by hand
                log.warning("matrix choice key not set", account=self.account_id, key=key, error=str(exc))
                continue
            entry["mine"].append(reaction)
        self.save()
        return sent

    async def settle(self, message_id: str) -> None:
        """A settled message: forget its choices and take the bot's keys off it (nothing left to pick)."""
        entry = self.open.pop(message_id, None)
        if entry is None:
            return
        self.save()
        for reaction in entry.get("mine") or []:
            try:
                await self._out.delete(str(entry["room"]), str(reaction))
            except ChannelError as exc:
                log.warning("matrix choice key not taken off", account=self.account_id, error=str(exc))
        self._out.forget_reactions(message_id)

    def picked(self, src: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        """The open choice a reaction picks, and what picking it types; None for any other reaction."""
        relates = (src.get("content") or {}).get("m.relates_to") or {}
        entry = self.open.get(str(relates.get("event_id") or ""))
        if relates.get("rel_type") != "m.annotation" or entry is None:
            return None
        key = bare(str(relates.get("key") or ""))
        data = next((d for k, d in entry["keys"].items() if bare(k) == key), None)
        return (entry, data) if data is not None else None

    def typed_pick(self, reply: str | None, text: str) -> str | None:
        """A reply to a message with open choices saying an option's number (or key): that option's data."""
        entry = self.open.get(reply or "")
        if entry is None:
            return None
        options = list(entry["keys"].items())
        said = bare(text)
        if said.isdigit() and 1 <= int(said) <= len(options):
            return str(options[int(said) - 1][1])
        return next((str(d) for k, d in options if bare(k) == said), None)
