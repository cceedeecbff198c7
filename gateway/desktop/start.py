"""Building the desktop capability: its service, the agents' tool list, ``/record``, the pages, the hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from gateway.composition.ports import DESKTOP_TOOLS, RECORDER
from gateway.hooks.runner import HookHandler

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost

__all__ = ["READY_EVENT", "start"]

log = structlog.get_logger("gateway.desktop")

READY_EVENT = "desktop.ready"
"""A desktop node, once paired and connected, says so: the gateway reads its tools then."""


async def start(host: CapabilityHost) -> None:
    """Capability entry (needs the node service; without it there is no desktop)."""
    from gateway.desktop.chat import ChatRecorder
    from gateway.desktop.methods import DESKTOP
    from gateway.desktop.service import DesktopService
    from gateway.desktop.trajectories import TrajectoryStore
    from gateway.desktop.web import routes, set_listen

    nodes = host.nodes
    if nodes is None:
        return
    service = DesktopService(nodes, host.config_store, host.db, host.sessions, host.services,
                             TrajectoryStore(host.state_dir), host.runs)
    host.services.provide(DESKTOP, service)
    host.services.provide(DESKTOP_TOOLS, service)
    host.services.provide(RECORDER, ChatRecorder(service, host.config_store))
    set_listen(host.listen)
    for route in routes(service.store, lambda request, key: host.may_read_session(request, key, query=True)):
        host.add_route(route)

    async def ready(node_id: str, _payload: Any) -> None:
        await service.tools.refresh(force_node=node_id)

    nodes.event_handlers[READY_EVENT] = ready
    # The run's tool calls while a recording runs are part of its trajectory (observed, never blocking).
    host.hooks.add(HookHandler("remoteclaw:desktop", "after_tool_call", service.observe_tool_call))
