"""The optional parts of an install (pip extras), and the one error a missing part answers with.

The core (web chat, SQLite, cron, nodes, the MCP shim) needs no extra. Every other capability imports its
library only when it is configured or first used; when the library is not installed, the capability's
methods, tools and status lines say which extra brings it and the command that installs it, and the gateway
keeps running. This table is the single place that knows which import comes from which extra (a test keeps it
in step with ``pyproject.toml``).

It sits at the gateway's top, beside ``gateway.installation`` (how this copy was installed, which the advice
depends on), rather than under ``gateway/cli/``: the capabilities and channels that raise ``MissingExtra`` are
not clients of the command line, and ``remoteclaw doctor`` reads the same table from here.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from gateway.protocol import Unavailable

__all__ = ["DEFAULT", "EXTRAS", "Extra", "MissingExtra", "extra_for_module", "install_command", "install_hint",
           "installed", "require"]


@dataclass(frozen=True, slots=True)
class Extra:
    name: str
    """The pip extra (``remoteclaw[<name>]``); ``install_hint`` says how to add it to this installation."""
    purpose: str
    """What it adds, for a person reading ``remoteclaw doctor``."""
    modules: tuple[str, ...]
    """Top-level modules it provides; all importable means installed."""


EXTRAS: tuple[Extra, ...] = (
    Extra("telegram", "the Telegram channel", ("telegram", "markdown_it")),
    Extra("discord", "the Discord channel", ("discord",)),
    Extra("matrix", "the Matrix channel (plugin)", ("nio", "markdown_it")),
    Extra("matrix-e2e", "end-to-end encrypted rooms on Matrix (vodozemac)", ("nio", "vodozemac")),
    Extra("slack", "the Slack channel (plugin; Socket Mode or the Events API)", ("slack_sdk", "aiohttp")),
    # httpx is a core dependency too: the extra exists so the channel can be asked for by name like the others.
    Extra("whatsapp", "the WhatsApp channel (plugin; Meta's Cloud API over httpx)", ("httpx",)),
    Extra("tts", "voice: spoken replies and voice notes transcribed (OGG/Opus, offline speech to text)",
          ("av", "pocketsphinx")),
    Extra("browser", "a node's headless browser and canvas (Playwright driving Chromium)", ("playwright",)),
    Extra("desktop", "a node's desktop: apps driven through their accessibility tree (Cua Driver)", ("cua_driver",)),
    Extra("postgres", "PostgreSQL storage (asyncpg)", ("asyncpg",)),
    Extra("redis", "several replicas sharing events and node routing (Redis)", ("redis",)),
    Extra("embeddings", "hybrid memory search with embeddings", ("openai", "numpy")),
    Extra("a2a", "A2A (Agent2Agent 1.0): the agents as A2A agents, and calling other A2A agents (a2a-sdk)",
          ("a2a", "sse_starlette")),
)
_BY_NAME = {e.name: e for e in EXTRAS}

DEFAULT = ("telegram", "discord", "tts")
"""What ``./scripts/gateway`` installs when ``REMOTECLAW_EXTRAS`` is not set (the ``default`` extra): the chat
channels and offline voice, what a person trying the project expects to work."""


class MissingExtra(Unavailable):
    """A capability whose library is not installed: ``UNAVAILABLE`` naming the extra and the command.

    ``details``: ``{code: "EXTRA_NOT_INSTALLED", extra, install, capability}``.
    """

    def __init__(self, extra: str, what: str | None = None) -> None:
        part = _BY_NAME[extra]
        needs = what or part.purpose
        super().__init__(
            f"{needs} needs the optional part '{extra}', which is not installed: {install_hint(extra)}",
            details={"code": "EXTRA_NOT_INSTALLED", "extra": extra, "install": install_command(extra),
                     "capability": needs},
        )
        self.extra = extra


def install_hint(extra: str) -> str:
    """How to add ``extra`` to this installation, as a person follows it: the command (through
    ``./scripts/gateway`` in a clone, into the same environment for an installed package; see
    ``gateway.installation``) and the restart it needs."""
    from gateway.installation import extra_advice

    return extra_advice(extra)


def install_command(extra: str) -> str:
    """Just the command of ``install_hint`` (for ``details.install`` and ``status()``)."""
    from gateway.installation import extra_command

    return extra_command(extra)


def installed(extra: str) -> bool:
    """True when every module of ``extra`` can be imported (found on the path; nothing is imported)."""
    part = _BY_NAME[extra]
    if all(importlib.util.find_spec(m) is not None for m in part.modules):
        return True
    importlib.invalidate_caches()  # installed while we run? look again past the finders' stale listings
    return all(importlib.util.find_spec(m) is not None for m in part.modules)


def require(extra: str, what: str | None = None) -> None:
    """Raise ``MissingExtra`` unless ``extra`` is installed.

    Args:
        extra: the pip extra's name (a key of ``EXTRAS``).
        what: what is being attempted, for the message ("text to speech"); default: the extra's purpose.
    """
    if not installed(extra):
        raise MissingExtra(extra, what)


def extra_for_module(module: str | None) -> str | None:
    """The extra providing ``module`` (``ImportError.name``, dotted or not), if one does."""
    top = (module or "").split(".")[0]
    return next((e.name for e in EXTRAS if top in e.modules), None)

