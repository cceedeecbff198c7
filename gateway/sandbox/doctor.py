"""What ``remoteclaw doctor`` says of the sandbox: can agent runs be confined here, and what would let a run
past it (a service on this machine's loopback that asks no password, reachable from a run on ``network: open``).
"""

from __future__ import annotations

import ipaddress
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from gateway.sandbox.probe import probe_bwrap
from gateway.sandbox.service import user_problem

if TYPE_CHECKING:
    from gateway.config import Config

__all__ = ["open_services", "sandbox_report"]


def _local(host: str | None) -> bool:
    if not host or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback or ipaddress.ip_address(host).is_private
    except ValueError:
        return host.endswith((".local", ".internal")) or "." not in host  # a compose service name


def open_services(config: Config) -> list[str]:
    """Services the gateway uses that a run with the machine's network could talk to without a password."""
    found = []
    redis = os.environ.get("REMOTECLAW_REDIS_URL") or getattr(config.gateway, "redisUrl", None)
    if redis:
        parts = urlsplit(redis)
        if not parts.password and _local(parts.hostname):
            found.append(f"Redis at {parts.hostname}:{parts.port or 6379} (no password)")
    database = os.environ.get("REMOTECLAW_DATABASE_URL", "")
    if database.startswith("postgres"):
        parts = urlsplit(database)
        if not parts.password and _local(parts.hostname):
            found.append(f"PostgreSQL at {parts.hostname}:{parts.port or 5432} (no password in the URL)")
    return found


def sandbox_report(config: Config) -> list[tuple[str, str, str, str | None]]:
    """``(name, status, detail, fix)`` rows for doctor: ok, warn or fail."""
    agents = config.agents
    modes = {a.id: agents.sandbox_for(a) for a in agents.list}
    off = sorted(i for i, s in modes.items() if s.mode == "off")
    probe = probe_bwrap()
    rows: list[tuple[str, str, str, str | None]] = []
    users = sorted({s.user for s in modes.values() if s.user})
    problems = [p for p in map(user_problem, users) if p]
    if probe.ok:
        rows.append(("sandbox", "ok", f"bubblewrap at {probe.path}; user namespaces allowed", None))
    elif users and not problems:
        rows.append(("sandbox", "warn", f"{probe.why}: runs start as the Unix user {', '.join(users)} instead "
                     "(the state dir owner-only; no network isolation)", probe.fix))
    elif users:
        rows.append(("sandbox", "fail", f"{probe.why}, and {'; '.join(problems)}: runs for anyone but the owner "
                     "are refused", probe.fix))
    else:
        rows.append(("sandbox", "fail", f"{probe.why}: runs for anyone but the owner are refused",
                     probe.fix))
    if off:
        rows.append(("sandbox mode", "warn", f"off for {', '.join(off)}: their runs can read the gateway's "
                     "config, database and token", "set agents.defaults.sandbox.mode to all (or non-owner)"))
    open_net = [i for i, s in modes.items() if s.mode != "off" and "open" in (s.network, s.othersNetwork)]
    services = open_services(config) if open_net else []
    if services:
        rows.append(("sandbox network", "fail", f"runs of {', '.join(sorted(open_net))} use the machine's network "
                     f"and could reach {'; '.join(services)}",
                     "give it a password (Redis: requirepass, and redis://:PASSWORD@host in the URL), or set "
                     "agents.defaults.sandbox.network to none"))
    return rows

