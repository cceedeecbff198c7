"""What the node fault tests share: a uniquely named long command, finding its process, pairing state."""

from __future__ import annotations

import contextlib
import secrets
import uuid
from pathlib import Path
from typing import Any

from tests.support.ws import RawClient

LONG = f"30.{secrets.randbelow(10**6):06d}"
"""``sleep 30`` with a unique fraction, so this test's command is told apart from anyone else's."""


def processes(cmdline: str) -> list[int]:
    """The processes whose command line ends so (a node host's child)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if (proc / "cmdline").read_bytes().replace(b"\0", b" ").strip().endswith(cmdline.encode()):
                    found.append(int(proc.name))
    return found


def system_run(node_id: str, argv: list[str], timeout_ms: int = 60000) -> dict[str, Any]:
    """``node.invoke`` params for ``system.run`` of ``argv``."""
    return {"nodeId": node_id, "command": "system.run", "params": {"argv": argv}, "timeoutMs": timeout_ms,
            "idempotencyKey": str(uuid.uuid4())}


async def node_row(c: RawClient, name: str) -> dict[str, Any] | None:
    return next((n for n in (await c.call("node.list"))["nodes"] if n["displayName"] == name), None)


async def pending(c: RawClient, name: str) -> dict[str, Any] | None:
    """The pairing request of the node called ``name``, once it is there."""
    return next((r for r in (await c.call("node.pair.list"))["pending"] if r["displayName"] == name), None)


async def connected(c: RawClient, name: str) -> bool:
    found = await node_row(c, name)
    return bool(found and found["connected"] and found["paired"])
