"""The A2A tool (1, owner only): a message to another agent over A2A 1.0 (``docs/a2a.md``).

The peers are the owner's, configured at the gateway (``a2a.peers[]``: URL and credential), so the tool names a
peer, never a URL or a token: the gateway holds the credential and makes the call (``a2a.send``). While the peer
answers, its words stream into this run's live reply (the gateway adds them to the run's ``chat`` deltas and live
note); the tool's result is the whole answer, with the ``contextId`` to pass back to continue the conversation.
"""

from __future__ import annotations

from mcp_shim.schema import integer, obj, string
from mcp_shim.tools._base import Call, Tool, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("a2a", TOOLS)

DEFAULT_TIMEOUT_S = 300


@tool("a2a_send", "Message an A2A agent",
      "Send a message to a configured A2A peer agent and wait for its reply; pass contextId back to continue.",
      obj({"peer": string("The peer's name in the gateway's a2a.peers", max_length=64),
           "message": string("Message text", max_length=100_000),
           "contextId": string("The conversation to continue (from an earlier reply)", max_length=128),
           "timeoutSeconds": integer(f"Seconds to wait for the reply (default {DEFAULT_TIMEOUT_S})", minimum=1,
                                     maximum=3600)},
          ("peer", "message")),
      open_world=True)
async def a2a_send(call: Call, a: dict[str, Any]) -> Any:
    timeout = int(a.get("timeoutSeconds") or DEFAULT_TIMEOUT_S)
    params = compact(peer=a["peer"], message=a["message"], contextId=a.get("contextId"), timeoutMs=timeout * 1000)
    return await call.gateway("a2a.send", params, timeout=timeout + 10)
