"""Capabilities: optional parts of the gateway that each live in one package and are named here once.

A capability package (``gateway/voice``, ``gateway/cron``...) declares what it adds in its ``__init__.py`` as one
``Capability``: the ``start(host)`` that builds its service from the collaborators it uses and provides it
(``host.services``), and its method modules. The gateway starts them in the order of ``CAPABILITIES``, after the
core services (``gateway.composition.wiring``), and imports their methods with the core's. A capability's ``remoteclaw``
sub-command is a ``remoteclaw.cli`` entry point like every other package's (so the CLI imports no capability
package to build its parser). Adding a capability is its package, one line here, its config section (one line
in ``gateway/config/model.py``), its migration (``migrations/versions``) and, if it has a sub-command, one entry
point.

Each ``start`` gets a ``CapabilityHost`` (``gateway.composition.hosts``), the part of the gateway a capability may
use. This module imports nothing of the gateway, so the capability packages, the method loader and the CLI can
read the declarations cheaply.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["CAPABILITIES", "Capability", "declared", "load"]

CAPABILITIES: tuple[str, ...] = (
    "gateway.audit",
    "gateway.approvals",
    "gateway.cron",
    "gateway.plugin_host",
    "gateway.canvas",
    "gateway.browser",
    "gateway.desktop",
    "gateway.voice",
    "gateway.mcp_http",
    "gateway.openai_api",
    "gateway.credentials",
    "gateway.a2a",
    "gateway.agent_hosts",
)
"""Capability packages, in start order (the audit log first: every other one may record when it starts; approvals
before cron: a cron run may ask; plugins before the canvas and browser routes; ``/mcp`` last, when every method is
registered)."""


@dataclass(frozen=True, slots=True)
class Capability:
    """What one capability adds. ``start`` is ``"module:function"``, imported when the gateway starts."""

    name: str
    start: str | None = None
    """``async def start(host: CapabilityHost) -> None``: build the service, provide it, register clean-up."""
    methods: tuple[str, ...] = ()
    """Modules whose ``@method`` declarations register the capability's gateway methods."""
    commands: tuple[str, ...] = ()
    """Modules whose ``@command`` declarations register the capability's chat commands
    (``gateway.dispatch.commands``)."""
    doctor: str | None = None
    """``def rows(config: Config) -> list[(name, status, detail, fix)]``: its lines in ``remoteclaw doctor``."""


def declared() -> Iterator[Capability]:
    """Every capability's declaration, in start order."""
    for package in CAPABILITIES:
        yield importlib.import_module(package).CAPABILITY


def load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)
