"""Building the agent-hosts capability (needs the node service; without it no agent runs on a node)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.composition.ports import AGENT_HOSTS

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost

__all__ = ["start"]


async def start(host: CapabilityHost) -> None:
    from gateway.agent_hosts.service import AgentHosts

    nodes = host.nodes
    if nodes is None:
        return
    service = AgentHosts(nodes, host.bus, host.runs, host.db, host.config_store)
    host.services.provide(AGENT_HOSTS, service)
    await service.parked.start()
    host.on_stop(service.parked.stop)
