"""The machine the gateway runs on: ``system.info`` and ``environments.list``.

OpenClaw's Control UI shows these on its Systems and Settings pages. ``system.info`` describes the machine
the gateway runs on (the schema calls the runtime version ``nodeVersion``: ours is Python's).
``environments.list`` is this gateway's own host, with the run slots free now, and the paired nodes, with the
agents whose turns run on each and whether a turn can be placed there now (``gateway.agent_hosts.environments``).
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

from pydantic import Field

from gateway.access import Access, Obj
from gateway.composition.ports import AGENT_HOSTS
from gateway.dispatch.dispatcher import READ, CallContext, NoParams, Params, method

_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64", "i686": "ia32", "armv7l": "arm"}
"""Machine names as OpenClaw's clients expect them (Node's ``process.arch``)."""


def _os_label() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}".strip()


def _memory() -> tuple[int, int]:
    """Total and available bytes (``MemAvailable``, not just free pages, where Linux reports it)."""
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
        kib = int(info["MemTotal"].split()[0]), int(info.get("MemAvailable", info["MemFree"]).split()[0])
        return kib[0] * 1024, kib[1] * 1024
    except (OSError, KeyError, ValueError):
        page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 0
        try:
            return os.sysconf("SC_PHYS_PAGES") * page, os.sysconf("SC_AVPHYS_PAGES") * page
        except (ValueError, OSError, AttributeError):
            return 0, 0


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_facts(state_dir: Path) -> dict[str, Any]:
    """The machine, as ``SystemInfoResult`` describes it (blocking reads of /proc: call in a thread)."""
    total, free = _memory()
    out: dict[str, Any] = {
        "machineName": socket.gethostname(), "hostname": socket.getfqdn(), "platform": sys.platform,
        "release": platform.release(), "arch": _ARCH.get(platform.machine().lower(), platform.machine().lower()),
        "osLabel": _os_label(), "nodeVersion": f"Python {platform.python_version()}", "pid": os.getpid(),
        "cpuCount": os.cpu_count() or 1, "memoryTotalBytes": total, "memoryFreeBytes": free,
    }
    if model := _cpu_model():
        out["cpuModel"] = model
    if hasattr(os, "getloadavg"):
        out["loadAverage"] = [round(x, 2) for x in os.getloadavg()]
    try:
        disk = shutil.disk_usage(state_dir)
        out.update(diskTotalBytes=disk.total, diskAvailableBytes=disk.free, diskPath=str(state_dir))
    except OSError:
        pass
    return out


@method("system.info", access=Access("gateway", "read"), scope=READ)
async def system_info(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """The gateway's host: OS, CPU, memory, disk of the state dir, process id and uptime."""
    import asyncio

    server = ctx.server
    facts = await asyncio.to_thread(host_facts, server.state_dir)
    facts.update(uptimeMs=server.uptime_ms(), port=ctx.listen[1], processInstanceId=server.instance_id)
    return facts


class EnvironmentsListParams(Params):
    includeDesktopSetup: bool | None = Field(None, description="Sent by the Control UI; accepted and ignored.")


@method("environments.list", access=Access("gateway", "read"), params=EnvironmentsListParams, scope=READ)
async def environments_list(_p: EnvironmentsListParams, ctx: CallContext) -> dict[str, Any]:
    """Where agent turns run: this gateway's host (``gateway``, as OpenClaw names it) and, for a caller that may
    read nodes, each paired node and each node an agent is placed on, with whether a turn can be placed there."""
    slots = ctx.config.agents.maxConcurrentRuns
    busy = ctx.runs.active_count
    local = [a for a in ctx.config.agents.list if a.node is None]
    out = [{
        "id": "gateway", "type": "local", "label": socket.gethostname() or "gateway host", "status": "available",
        "platform": sys.platform, "sessionHost": True, "trust": "persistent",
        "workerSlots": {"total": max(1, min(slots, 1024)), "available": max(0, min(slots - busy, 1024))},
        "capabilities": [f"agent {a.id}" for a in local] + sorted({a.runtime for a in local}),
    }]
    hosts = ctx.services.find(AGENT_HOSTS)  # with the node service only
    if hosts is not None and ctx.access.allows(ctx.caller, "read", Obj("node")):
        out += await hosts.environments(list(ctx.config.agents.list))
    return {"environments": out}
