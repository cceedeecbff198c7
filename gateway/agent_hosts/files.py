"""Files both ways for a turn on a node: the message's attachments go with ``agent.run``, a file its agent sends
back is read on the node (``agent.file``).

Attachments: a local turn finds them copied into its folder (``attachments/``, or a project's
``.remoteclaw/attachments/``, ``gateway.agents.workspace``); a turn on a node gets the same files at the same place
in its folder on the node. The gateway reads its own copies (uploads it saved, a chat app's downloads) and sends
their bytes with the invoke, bounded in total by ``nodes.agentFilesMaxBytes``; the node writes them itself, inside
the turn's folder only (``nodes.agents.files``).

Files back: the run's MCP shim runs on the node, so a path it names (``message_send_attachment {file}``,
``message_send {media}``, ``voice.transcribe {path}``) is a path on the node. The gateway never opens it on its own
disk (``gateway.sandbox.reach.read_run_file``): it asks the node, which reads it once inside that turn's folder,
through no symlink, at most ``nodes.agentFilesMaxBytes`` (and what fits in one frame of the node's connection).
Which node, and which turn, come from the run's token (``RunGrant.node_id``, ``run_id``), never from the request.
"""

from __future__ import annotations

import base64
import binascii
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from gateway.agents.workspace import ATTACHMENTS_DIR, safe_name
from gateway.protocol import InvalidRequest, RpcError
from gateway.sandbox.open_beneath import FileBytes

if TYPE_CHECKING:
    from gateway.config import ConfigStore
    from gateway.devices.service import NodeService
    from gateway.dispatch.callers import Caller
    from gateway.runs import Run

__all__ = ["FILE_TIMEOUT_MS", "TooLarge", "file_from_node", "outgoing_limit", "renamed_in_prompt", "size_text",
           "turn_attachments"]

log = structlog.get_logger("gateway.agent_hosts")

FILE_TIMEOUT_MS = 60_000
FRAME_MARGIN = 64 * 1024
"""Room in the node's answer frame for what is not the file (the envelope, the JSON around the base64)."""
QUEUE_MARGIN = 1024 * 1024
"""Room in the node connection's send queue for what else is queued there, and the rest of ``agent.run``."""


class TooLarge(Exception):
    """The message's files are more than a turn on a node carries: the chat's answer."""


def size_text(n: int) -> str:
    """``64 KB``, ``20 MB``: a limit as the chat reads it."""
    return f"{n / (1024 * 1024):.3g} MB" if n >= 1024 * 1024 else f"{n / 1024:.3g} KB"


def outgoing_limit(config: ConfigStore) -> int:
    """What one turn's attachments may be in all: ``nodes.agentFilesMaxBytes``, and what the node's connection may
    queue in one frame as base64 (``gateway.maxBufferedBytes``: a frame past it closes the connection as slow)."""
    cfg = config.config
    return max(0, min(cfg.nodes.agentFilesMaxBytes, (cfg.gateway.maxBufferedBytes - QUEUE_MARGIN) * 3 // 4))


def turn_attachments(run: Run, *, limit: int, node: str) -> list[dict[str, str]]:
    """Every request's files as the node writes them (``{name, base64}``), read from the gateway's own copies (as
    ``copy_attachments`` does for a local turn; one that cannot be read is logged and left out); ``TooLarge`` past
    ``limit`` bytes in total (blocking: run in a thread)."""
    sources = [f for req in run.requests for f in req.files]
    sizes: dict[str, int] = {}
    for source in sources:
        try:
            sizes[source] = os.stat(source).st_size
        except OSError as exc:
            log.warning("attachment not sent to the node", run_id=run.id, file=source, error=str(exc))
    total = sum(sizes.values())
    if total > limit:
        raise TooLarge(f"the message's attachments ({size_text(total)}) are more than the {size_text(limit)} a turn "
                       f"on node {node} carries (nodes.agentFilesMaxBytes, within gateway.maxBufferedBytes); send "
                       "smaller files, or fewer at once")
    out: list[dict[str, str]] = []
    for source in sizes:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            log.warning("attachment not sent to the node", run_id=run.id, file=source, error=str(exc))
            continue
        out.append({"name": safe_name(Path(source).name), "base64": base64.b64encode(data).decode()})
    return out


def renamed_in_prompt(prompt: str, run: Run) -> str:
    """The prompt naming each attachment as the node writes it (``safe_name``; the gateway's own names pass)."""
    for source in (f for req in run.requests for f in req.files):
        name = Path(source).name
        if safe_name(name) != name:
            prompt = prompt.replace(f"{ATTACHMENTS_DIR}/{name}]", f"{ATTACHMENTS_DIR}/{safe_name(name)}]")
    return prompt


async def file_from_node(nodes: NodeService, config: ConfigStore, caller: Caller, file: str, field: str,
                         max_bytes: int) -> FileBytes:
    """``file`` as the run's turn on its node sees it, read there (``agent.file``); ``InvalidRequest`` naming
    ``field`` when the node refuses it (outside the turn's folder, a link, too large, not found)."""
    node_id, turn_id = caller.run_node, caller.extra.get("runId")
    if node_id is None or not isinstance(turn_id, str):
        raise InvalidRequest(f"{field}: only an agent run's turn on a node has files there", details={"field": field})
    cfg = config.config
    limit = min(max_bytes, cfg.nodes.agentFilesMaxBytes, (cfg.gateway.maxPayload - FRAME_MARGIN) * 3 // 4)
    try:
        answer = await nodes.invoke(node_id, "agent.file", {"turnId": turn_id, "path": file, "maxBytes": limit},
                                    timeout_ms=FILE_TIMEOUT_MS, idempotency_key=f"agent.file:{uuid.uuid4().hex}",
                                    remember=False)
    except RpcError as err:
        refused = (err.details or {}).get("nodeError")
        why = str(refused.get("message")) if isinstance(refused, dict) and refused.get("message") else err.message
        raise InvalidRequest(f"{field}: {why}", details={"field": field}) from None
    payload: Any = answer.get("payload")
    try:
        data = base64.b64decode(str(payload["base64"]), validate=True)
        name = safe_name(str(payload.get("name") or Path(file).name))
    except (KeyError, TypeError, binascii.Error, ValueError):
        raise InvalidRequest(f"{field}: the node's answer to agent.file carries no file", details={"field": field}) \
            from None
    if len(data) > limit:
        raise InvalidRequest(f"{field}: {file} is larger than {size_text(limit)}, the most a file sent from a node "
                             "may be", details={"field": field})
    return FileBytes(name=name, data=data, where=f"node:{node_id}:{file}")
