"""The settings that are the owner's alone: those that widen who reaches what, or that run code.

An admin changes the config like the owner (``config.patch``/``set``/``apply``), but a write that touches any of
these is refused whole, naming the first such path. What counts is a change of the effective value: the running
config and the new one are compared, so a whole config sent back as ``config.get`` showed it (secrets redacted,
agents' commands as they are) passes when only ordinary settings differ. Declared once, here; docs/people.md
lists them for people.

Three rules, any of which makes a path the owner's:

- ``OWNER_ONLY``: the listed settings, and everything under them;
- a credential: every field the schema marks secret (``secret_paths``);
- a setting that names a path, a command or an address (``NAMING_WORDS``, the last word of its key: ``root``,
  ``passEnv``, ``apiBase``, ``webhookUrl``), wherever it is, plugins' and open sections' keys too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from gateway.config.model import AgentConfig, secret_paths

if TYPE_CHECKING:
    from gateway.config.model import Config

__all__ = ["NAMING_WORDS", "OWNER_ONLY", "is_owner_only", "owner_only_changes"]

OWNER_ONLY: Final[tuple[str, ...]] = (
    "gateway",                          # where and how it listens: auth, bind, origins, URLs, Redis, /mcp, Control UI
    "people.adminsReadTranscripts",     # admins reading everyone's conversations
    "people.signinUrl",                 # where sign-in links (credentials) point
    "agents.default",                   # which agent answers whoever has none of their own
    "agents.defaults",                  # every agent's sandbox: mode, network, binds, passEnv, user
    "agents.list.*.runtime",            # what each agent runs, and with what
    "agents.list.*.command",
    "agents.list.*.env",
    "agents.list.*.agent",
    "agents.list.*.acp",
    "agents.list.*.sandbox",
    "agents.list.*.credentialsMode",        # whether other people's runs may hold its credentials
    "agents.list.*.permissions",        # what runs without asking
    "agents.list.*.toolProfile",
    "agents.list.*.projects",           # folders it works in, and who may
    "agents.list.*.node",               # the machine its turns run on
    "agents.list.*.workspace",          # the folder they work in there
    "agents.list.*.people",             # who may talk to it
    "agents.list.*.heartbeat",          # turns nobody asked for, delivered to a chat
    "channels.ownerAllowFrom",          # who is the owner
    "channels.*.ownerAllowFrom",
    "channels.*.accounts.*.ownerAllowFrom",
    "session.dmScope",                  # whether strangers' chats share a conversation
    "approvals.exec",                   # where approval requests go, and who answers them
    "nodes.allowCommands",              # what paired machines run
    "nodes.denyCommands",
    "nodes.autoApproveLoopback",
    "nodes.browserNode",
    "plugins",                          # code the gateway loads: enabled, allow/deny, load paths, their settings
    "cron.webhookAllowPrivate",         # deliveries into the private network
    "audit",                            # the record of what admins did
    "modelGateway",                     # the model gateway: OAuth endpoints, prices, what runs may reach
    "api",                              # the HTTP APIs other programs call (the OpenAI-compatible one): new doors
)
"""Dotted patterns: ``*`` is any one key or list item; a pattern covers everything under it."""

NAMING_WORDS: Final = frozenset({
    "path", "paths", "dir", "dirs", "folder", "root", "file", "command", "cmd", "args", "argv", "env", "bind",
    "binds", "exec", "script", "url", "urls", "uri", "base", "endpoint", "socket",
})
"""The last word of a key (camelCase split) that says the setting names a path, a command or an address."""

_KEYED: Final[dict[tuple[str, ...], tuple[str, type[BaseModel]]]] = {("agents", "list"): ("id", AgentConfig)}
"""Lists whose items are matched by a key, not by position (a reordered list changes nothing)."""
_PATTERNS: Final = tuple(tuple(p.split(".")) for p in OWNER_ONLY)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_MISSING: Final = object()


def owner_only_changes(old: Config, new: Config) -> list[str]:
    """The dotted paths (list items by their index in the new config) whose effective value ``new`` changes and
    that are the owner's alone; empty when the change is one an admin may make."""
    before, after = old.model_dump(mode="json"), new.model_dump(mode="json")
    return [".".join(path) for path in _changed(before, after, ()) if is_owner_only(path)]


def is_owner_only(path: tuple[str, ...]) -> bool:
    """Whether the setting at ``path`` (keys and list indexes) is the owner's alone."""
    if any(_matches(pattern, path) for pattern in _PATTERNS):
        return True
    if any(_matches(pattern, path) for pattern in secret_paths()):
        return True
    return any(_names_something(key) for key in path if not key.isdigit())


def _names_something(key: str) -> bool:
    words = _WORDS.findall(key)
    return bool(words) and words[-1].lower() in NAMING_WORDS


def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """``pattern`` covers ``path`` (or the whole of ``path`` holds a part that pattern names)."""
    return all(want in ("*", got) for want, got in zip(pattern, path, strict=False))


def _changed(old: Any, new: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The paths of the leaves that differ (a missing key is the same as null: both mean unset)."""
    if (None if old is _MISSING else old) == (None if new is _MISSING else new):
        return
    keyed = _KEYED.get(path)
    if keyed is not None and isinstance(old, list) and isinstance(new, list):
        yield from _changed_items(old, new, path, *keyed)
        return
    if isinstance(old, dict) or isinstance(new, dict):
        before = old if isinstance(old, dict) else {}
        after = new if isinstance(new, dict) else {}
        for key in sorted(before.keys() | after.keys(), key=str):
            yield from _changed(before.get(key, _MISSING), after.get(key, _MISSING), (*path, str(key)))
        return
    yield path


def _changed_items(old: list[Any], new: list[Any], path: tuple[str, ...], key: str,
                   model: type[BaseModel]) -> Iterator[tuple[str, ...]]:
    """Items matched by ``key``: a new one compared with a fresh item of ``model`` (so only what it sets counts);
    a removed one changes nothing (taking an agent away widens nobody's reach)."""
    previous = {item.get(key): item for item in old if isinstance(item, dict)}
    for index, item in enumerate(new):
        if not isinstance(item, dict):
            yield (*path, str(index))
            continue
        base = previous.get(item.get(key))
        if base is None:
            fresh: dict[str, Any] = {key: item.get(key)}
            base = model.model_construct(**fresh).model_dump(mode="json")
        yield from _changed(base, item, (*path, str(index)))
