"""Our side as an A2A client, on the SDK's client (``a2a.client``): resolve an Agent Card, send a message and read
the reply as it streams. Used by ``remoteclaw a2a card|send`` and by ``a2a.send`` (the ``a2a_send`` tool).

A URL is an agent's base URL: its card is at ``<url>/.well-known/agent-card.json`` (a URL given with that path is
taken as the card's). The credential, when there is one, goes as ``Authorization: Bearer`` on every request,
the card's too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.client.errors import A2AClientError
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, StreamResponse, Task, TaskState
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from google.protobuf.json_format import MessageToDict

from gateway.protocol import Unavailable

__all__ = ["A2aCallFailed", "card", "send"]


class A2aCallFailed(Unavailable):
    """The peer could not be reached, or answered with an error: ``UNAVAILABLE`` naming the URL."""


def _base(url: str) -> str:
    url = url.strip().rstrip("/")
    return url.removesuffix(AGENT_CARD_WELL_KNOWN_PATH)


def _http(credential: str | None, timeout_s: float) -> httpx.AsyncClient:
    headers = {"authorization": f"Bearer {credential}"} if credential else {}
    return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout_s, connect=10.0))


async def card(url: str, *, credential: str | None = None, timeout_s: float = 30.0) -> dict[str, Any]:
    """The Agent Card at ``url``, as JSON."""
    async with _http(credential, timeout_s) as http:
        try:
            got = await A2ACardResolver(http, _base(url)).get_agent_card()
        except (A2AClientError, httpx.HTTPError) as exc:
            raise A2aCallFailed(f"url: no Agent Card at {_base(url)}: {exc}", details={"field": "url"}) from None
    return agent_card_to_dict(got)


def _text(parts: Any) -> str:
    return "".join(p.text for p in parts if p.text)


def _state(value: int) -> str:
    return TaskState.Name(value).removeprefix("TASK_STATE_").lower().replace("_", "-")


async def send(url: str, text: str, *, credential: str | None = None, context_id: str | None = None,
               timeout_s: float = 300.0, on_text: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Send ``text`` to the agent at ``url`` and read its answer to the end (streamed when the card allows).

    Returns ``{reply, state, taskId, contextId, files, events}``: the reply's text (the task's reply artifact, or
    the agent's message), the task's last state, the ids to continue with, the files of its artifacts, and how many
    events came. ``on_text`` is told each new piece of the reply as it arrives.
    """
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)],
                      context_id=context_id or "")
    reply: dict[str, str] = {}
    files: list[dict[str, Any]] = []
    last: dict[str, Any] = {"state": "unknown", "taskId": None, "contextId": context_id, "message": ""}
    events = 0
    async with _http(credential, timeout_s) as http:
        try:
            client = await ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create_from_url(_base(url))
            async for item in client.send_message(SendMessageRequest(message=message)):
                events += 1
                _take(item, reply, files, last, on_text)
        except (A2AClientError, httpx.HTTPError, ValueError) as exc:
            raise A2aCallFailed(f"url: the A2A call to {_base(url)} failed: {exc}", details={"field": "url"}) from None
    text_out = "".join(reply.values()) or last["message"]
    return {"reply": text_out, "state": last["state"], "taskId": last["taskId"], "contextId": last["contextId"],
            "files": files, "events": events}


def _take(item: StreamResponse, reply: dict[str, str], files: list[dict[str, Any]], last: dict[str, Any],
          on_text: Callable[[str], None] | None) -> None:
    """One streamed event into what ``send`` answers."""
    if item.HasField("message"):
        last["message"] = _text(item.message.parts)
        last["contextId"] = item.message.context_id or last["contextId"]
        last["state"] = "completed"
        return
    task: Task | None = item.task if item.HasField("task") else None
    if task is not None:
        last.update(taskId=task.id, contextId=task.context_id, state=_state(task.status.state))
        if task.status.HasField("message"):
            last["message"] = _text(task.status.message.parts)
        for artifact in task.artifacts:
            _artifact(artifact, False, reply, files, None)
    if item.HasField("status_update"):
        update = item.status_update
        last.update(taskId=update.task_id, contextId=update.context_id, state=_state(update.status.state))
        if update.status.HasField("message"):
            last["message"] = _text(update.status.message.parts)
    if item.HasField("artifact_update"):
        _artifact(item.artifact_update.artifact, item.artifact_update.append, reply, files, on_text)


def _artifact(artifact: Any, append: bool, reply: dict[str, str], files: list[dict[str, Any]],
              on_text: Callable[[str], None] | None) -> None:
    for part in artifact.parts:
        if part.url or part.raw:
            files.append({k: v for k, v in MessageToDict(part).items() if k != "raw"})
    piece = _text(artifact.parts)
    if not piece:
        return
    before = reply.get(artifact.artifact_id, "")
    now = before + piece if append else piece
    reply[artifact.artifact_id] = now
    if on_text is not None and now.startswith(before) and len(now) > len(before):
        on_text(now[len(before):])
