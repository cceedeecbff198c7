"""Who may talk to the agent: DM policy, group rules, the owner decision, and pairing codes.

The decision itself (``decide``) is a pure function of the channel's policy config, the message and
whether the sender was approved through pairing, so it is easy to read and to test. Pairing
requests and approved senders are stored beside it (``gateway.platforms.sender_pairing``).

Policies (per channel, ``channels.<name>``):
- ``dmPolicy``: ``pairing`` (default; an unknown sender gets a short code the owner approves),
  ``allowlist`` (only ``allowFrom`` and earlier approvals), ``open`` (anyone), ``disabled``.
- groups: ``groupPolicy`` ``allowlist`` (default; only chats under ``groups``, ``*`` for all),
  ``open`` or ``disabled``; senders limited by the group's ``allowFrom`` or ``groupAllowFrom``;
  ``requireMention`` (default true) makes the bot answer only when mentioned or replied to.
- owner: ``ownerAllowFrom`` on the channel, or ``channels.ownerAllowFrom`` entries ``<channel>:<id>``.
  Only the owner's runs get the owner tool tier. The owner may always DM the bot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gateway.config import ChannelAccessConfig
from gateway.platforms.messages import Inbound

__all__ = ["Decision", "access_config", "decide", "is_owner"]


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["allow", "pair", "drop"]
    reason: str
    is_owner: bool = False


def access_config(section: Any) -> ChannelAccessConfig:
    """The access part of a channel's config section (a model, a plain dict, or nothing)."""
    if isinstance(section, ChannelAccessConfig):
        return section
    if hasattr(section, "model_dump"):
        section = section.model_dump()
    if not isinstance(section, dict):
        return ChannelAccessConfig()
    known = {k: v for k, v in section.items() if k in ChannelAccessConfig.model_fields}
    return ChannelAccessConfig.model_validate(known)


def _matches(entries: list[str], channel: str, sender_id: str) -> bool:
    for raw in entries:
        entry = raw.strip()
        prefix, sep, rest = entry.partition(":")
        if sep and prefix.strip().lower() == channel:
            entry = rest.strip()  # "telegram:123" on telegram; other prefixes never match a bare id
        if entry == "*" or entry == sender_id:
            return True
    return False


def is_owner(cfg: ChannelAccessConfig, global_owners: list[str], msg: Inbound) -> bool:
    """Whether the sender is this channel's owner (channel list, or ``<channel>:<id>`` globally)."""
    if _matches([e for e in cfg.ownerAllowFrom if e.strip() != "*"], msg.channel, msg.sender_id):
        return True
    scoped = [e for e in global_owners if ":" in e and not e.endswith(":*")]
    return _matches(scoped, msg.channel, msg.sender_id)


def decide(cfg: ChannelAccessConfig, msg: Inbound, *, owner: bool, approved: bool) -> Decision:
    """Allow the message to reach the agent, answer with a pairing code, or drop it."""
    if not cfg.enabled:
        return Decision("drop", "channel disabled")
    if msg.chat_type == "dm":
        if owner:
            return Decision("allow", "owner", is_owner=True)
        if cfg.dmPolicy == "disabled":
            return Decision("drop", "dms disabled")
        if cfg.dmPolicy == "open" or approved or _matches(cfg.allowFrom, msg.channel, msg.sender_id):
            return Decision("allow", f"dm {cfg.dmPolicy}")
        if cfg.dmPolicy == "pairing":
            return Decision("pair", "unknown sender")
        return Decision("drop", "sender not in allowFrom")
    if msg.chat_type != "group":
        return Decision("drop", f"{msg.chat_type} posts are not conversations")
    if cfg.groupPolicy == "disabled":
        return Decision("drop", "groups disabled")
    group = cfg.groups.get(msg.chat_id) or cfg.groups.get("*")
    if group is None and cfg.groupPolicy == "allowlist":
        return Decision("drop", "group not in allowlist")
    if group is not None and not group.enabled:
        return Decision("drop", "group disabled")
    senders = (group.allowFrom if group and group.allowFrom else None) or cfg.groupAllowFrom
    if senders and not owner and not _matches(senders, msg.channel, msg.sender_id):
        return Decision("drop", "sender not allowed in this group")
    need_mention = cfg.requireMention if group is None or group.requireMention is None else group.requireMention
    if need_mention and not msg.mentioned:
        return Decision("drop", "not mentioned")
    return Decision("allow", "group", is_owner=owner)
