"""Who did it, as the audit log writes it: a short, stable string per kind of caller, and the kind.

The string names the person or thing accountable, short enough to read in a list and stable enough to filter
on (``--actor device:``): an operator device by its key (``device:<id8>``), an agent run by its session
(``agent-run:<sessionKey>``), a remote MCP client by its token's name, the ``remoteclaw`` CLI as ``cli`` (with
its address when it is not on this machine), any other client as ``operator:<clientId>@<address>``. Packages
that know better (people: ``person:<id>``; a chat sender: ``sender:<channel>:<id>``) pass the string itself.
"""

from __future__ import annotations

import ipaddress

from gateway.dispatch.callers import Caller

__all__ = ["KINDS", "actor_of", "kind_of"]

KINDS = frozenset({"device", "node", "operator", "cli", "agent-run", "mcp-token", "plugin", "person", "sender",
                   "system"})
"""What ``actor_kind`` may say; an actor string's prefix before ``:`` names its kind."""



def _local(remote: str) -> bool:
    """This machine: a loopback address, or a socket with no address (the Unix socket runs reach us by)."""
    try:
        address = ipaddress.ip_address(remote)
    except ValueError:
        return remote in ("", "unknown", "localhost")
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def actor_of(caller: Caller) -> tuple[str, str]:
    """``(actor, kind)`` for a caller of a gateway method."""
    if caller.person_id is not None and caller.run_session is None:  # a person's own sign-in (gateway.people)
        return f"person:{caller.person_id}", "person"
    if caller.run_session is not None or caller.reach is not None:
        session = caller.run_session or (caller.confined_to.session_key if caller.confined_to else "?")
        return f"agent-run:{session}", "agent-run"
    if caller.client_id == "remoteclaw-mcp-http":
        name = (caller.display_name or "").removeprefix("mcp token ") or caller.conn_id
        return f"mcp-token:{name}", "mcp-token"
    if caller.conn_id.startswith("plugin:"):
        return caller.conn_id, "plugin"
    if caller.role == "node":
        return f"node:{(caller.device_id or caller.client_id)[:8]}", "node"
    if caller.device_id:
        return f"device:{caller.device_id[:8]}", "device"
    if caller.client_id == "cli" and caller.client_mode == "cli":
        return ("cli", "cli") if _local(caller.remote) else (f"cli@{caller.remote}", "cli")
    return f"operator:{caller.client_id}@{caller.remote}", "operator"


def kind_of(actor: str) -> str:
    """The kind an actor string given by a package names (``person:ab12`` is a person); ``system`` if none."""
    prefix = actor.split(":", 1)[0].split("@", 1)[0]
    return prefix if prefix in KINDS else "system"
