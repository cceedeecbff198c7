"""Asking the person (2): ``ask_user`` puts questions to the session's person, ``approval_prompt`` is the tool
Claude Code's ``--permission-prompt-tool`` calls for a tool use its allow-list does not decide.

Both open a request on the gateway under an id chosen here (``questions.ask`` / ``approvals.ask``) and then
wait for its outcome in bounded steps (``approvals.wait``, a read the client repeats after a reconnect), so the
call lasts as long as the person takes, and a decision made while the socket was down is still found. While
it waits the server sends MCP progress notifications (for a call that asked for them), so the agent CLI does
not give up on the call.
"""

from __future__ import annotations

from mcp_shim.schema import any_value, array, boolean, free_object, integer, obj, string
from mcp_shim.tools._base import Call, Content, Tool, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("approvals", TOOLS)

WAIT_STEP_MS = 20_000
"""One ``approvals.wait`` holds at most this long (below the client's request timeout); then it asks again."""


def _new_id(prefix: str) -> str:
    import uuid  # imported on first use: listing tools does not need it

    return f"{prefix}-{uuid.uuid4().hex[:16]}"


async def _outcome(call: Call, request_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """Wait until the request is no longer pending; its last state.

    A wait that fails on the way (the socket dropped, the gateway is restarting) is asked again until the
    request's own expiry has passed: the decision is kept under its id, so whatever was decided meanwhile is
    found; only a refusal that is not worth repeating (an unknown id) ends the call.
    """
    import asyncio
    import time

    from gateway.protocol import RpcError

    give_up = float(state.get("expiresAtMs") or 0) / 1000 + 60
    while state.get("status") == "pending":
        try:
            state = await call.gateway(
                "approvals.wait",
                {"id": request_id, "sessionKey": call.ctx.session_key, "timeoutMs": WAIT_STEP_MS},
                timeout=WAIT_STEP_MS / 1000 + 5,
            )
        except RpcError as exc:
            if not exc.retryable or time.time() > give_up:
                raise
            await asyncio.sleep(0.5)
    return state


_OPTION = obj(
    {"label": string("What the person picks (short)"), "description": string("What this option means", min_length=0)},
    ("label",),
)
_QUESTION = obj(
    {
        "id": string("A short id for this question: lowercase letters, digits and _, starting with a letter"),
        "header": string("A tag of at most 12 characters shown above the question"),
        "question": string("The question, ending with a question mark"),
        "options": {
            **array(_OPTION, "2 to 4 choices; the person may also type a free answer"),
            "minItems": 2,
            "maxItems": 4,
        },
        "multiSelect": boolean("Let the person pick several options"),
    },
    ("id", "header", "question", "options"),
)


@tool(
    "ask_user",
    "Ask the user",
    "Ask your user 1-3 multiple-choice questions and wait for the answers (no_answer if none in time).",
    obj(
        {
            "questions": {**array(_QUESTION, "The questions (1 to 3)"), "maxItems": 3},
            "timeoutSeconds": integer(
                "How long to wait for an answer (default: the gateway's, 900 s)", minimum=1, maximum=86_400
            ),
        },
        ("questions",),
    ),
    open_world=True,
)
async def ask_user(call: Call, a: dict[str, Any]) -> Any:
    request_id = _new_id("q")
    questions = [
        {
            "questionId": q["id"],
            "header": q["header"],
            "question": q["question"],
            "options": q["options"],
            **({"multiSelect": q["multiSelect"]} if "multiSelect" in q else {}),
        }
        for q in a["questions"]
    ]
    params: dict[str, Any] = {
        "id": request_id,
        "sessionKey": call.ctx.session_key,
        "questions": questions,
        "idempotencyKey": request_id,
    }
    if a.get("timeoutSeconds") is not None:
        params["timeoutSeconds"] = a["timeoutSeconds"]
    state = await _outcome(call, request_id, await call.gateway("questions.ask", params))
    if state.get("status") == "answered":
        return {"status": "answered", "answers": state.get("answers") or {}, "answeredBy": state.get("resolvedBy")}
    if state.get("status") == "expired":
        return {"status": "no_answer", "message": "Nobody answered in time; decide yourself or end your turn."}
    return {"status": "no_answer", "message": "The question was withdrawn before anyone answered."}


@tool(
    "approval_prompt",
    "Ask permission for a tool use",
    "Permission prompt for the agent CLI: asks the user to allow or deny a tool use, and waits.",
    obj(
        {
            "tool_name": string("The tool the agent wants to use"),
            "input": free_object("The tool's input"),
            "tool_use_id": string("The tool use's id", min_length=0),
            "permission_suggestions": any_value("Suggested rules (ignored: the person decides)"),
        },
        ("tool_name", "input"),
    ),
    open_world=True,
)
async def approval_prompt(call: Call, a: dict[str, Any]) -> Any:
    import json

    tool_input = a.get("input") or {}
    request_id = _new_id("a")
    params: dict[str, Any] = {
        "id": request_id,
        "sessionKey": call.ctx.session_key,
        "toolName": a["tool_name"],
        "input": tool_input,
        "idempotencyKey": request_id,
    }
    if a.get("tool_use_id"):
        params["toolUseId"] = a["tool_use_id"]
    state = await _outcome(call, request_id, await call.gateway("approvals.ask", params))
    if state.get("status") == "allowed":
        verdict: dict[str, Any] = {"behavior": "allow", "updatedInput": tool_input}
    else:
        verdict = {"behavior": "deny", "message": _deny_message(a["tool_name"], state)}
    return Content([{"type": "text", "text": json.dumps(verdict)}])


def _deny_message(tool_name: str, state: dict[str, Any]) -> str:
    status, who = state.get("status"), state.get("resolvedBy")
    if status == "expired":
        return f"Permission to use {tool_name} was not given in time (timeout); it was denied."
    if status == "cancelled":
        return f"Permission to use {tool_name} was withdrawn ({state.get('reason') or 'cancelled'})."
    return f"The user denied permission to use {tool_name}" + (f" ({who})." if who else ".")
