"""``remoteclaw doctor``'s lines on the model gateway: per agent, which credential the gateway holds (and which
login it refreshes), what cannot be fronted, and the egress each tier gets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.agents.runtimes import runtime_for
from gateway.credentials.clis import plan_for
from gateway.credentials.service import family_of

if TYPE_CHECKING:
    from gateway.config import Config

__all__ = ["credentials_report"]

Row = tuple[str, str, str, str | None]


def _egress(network: str, allow: list[str]) -> str:
    if network == "open":
        return "the machine's network"
    hosts = f" and {', '.join(allow)} through the gateway's HTTPS proxy" if allow else ""
    return f"none: the gateway only (model gateway, MCP){hosts}"


def credentials_report(config: Config) -> list[Row]:
    """``(name, status, detail, fix)`` rows: ok, warn or fail."""
    cfg = config.modelGateway
    rows: list[Row] = []
    if not cfg.enabled:
        rows.append(("model gateway", "warn", "off (modelGateway.enabled false): the owner's runs hold the real "
                     "credentials, and other people's runs are refused", "set modelGateway.enabled to true"))
    for agent in config.agents.list:
        name = f"model gateway: {agent.id}"
        try:
            runtime = runtime_for(agent)
        except ValueError as exc:
            rows.append((name, "fail", str(exc), None))
            continue
        plan = plan_for(family_of(runtime), {**os.environ, **agent.env},
                        Path(agent.env.get("HOME") or Path.home()).expanduser())
        sandbox = config.agents.sandbox_for(agent)
        if plan.unfronted:
            if agent.credentialsMode == "shared":
                rows.append((name, "warn", f"{plan.unfronted}; credentialsMode: shared, so other people's runs hold "
                             "the owner's credential and can read it out", "give the agent an API key the model "
                             "gateway can front, and remove credentialsMode: shared"))
            else:
                rows.append((name, "warn", f"{plan.unfronted}: only the owner's runs may use this agent",
                             "give it an API key (or set credentialsMode: shared, and read docs/credentials.md)"))
        elif cfg.enabled:
            held = "; ".join(f"{u.base_url}: {u.credential.source}"
                             + (" (a subscription login it refreshes)" if u.credential.login else "")
                             for u in plan.upstreams) or "nothing to front"
            rows.append((name, "ok", f"runs hold a stand-in; the gateway holds {held}", None))
            if sandbox.mode != "all":
                rows.append((name, "warn", f"sandbox mode {sandbox.mode}: the owner's runs are not sandboxed and "
                             "can read the credential files themselves", "set agents.defaults.sandbox.mode to all"))
        owner_hosts = sandbox.egress_for(owner=True, default=cfg.egress.allow)
        others_hosts = sandbox.egress_for(owner=False, default=cfg.egress.allow)
        rows.append((f"egress: {agent.id}", "ok", f"owner: {_egress(sandbox.network, owner_hosts)}; everyone "
                     f"else: {_egress(sandbox.othersNetwork, others_hosts)}", None))
    return rows
