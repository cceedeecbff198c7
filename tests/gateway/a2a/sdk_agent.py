"""a2a-sdk's own minimal server, run as a process by the client tests: ``python -m tests.gateway.a2a.sdk_agent PORT
TOKEN``. An echo agent built only from the SDK (its Starlette routes, ``DefaultRequestHandler``,
``InMemoryTaskStore``, ``TaskUpdater``): it answers in three streamed artifact chunks, then completes; every request
but the card's needs ``Authorization: Bearer TOKEN``, and it records the last bearer it saw at ``/seen``.
A message containing ``slowly`` is answered with 0.4 s between the chunks (to follow a reply as it streams)."""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:  # type: ignore[no-untyped-def]
        text = context.get_user_input()
        task_id, ctx = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            await event_queue.enqueue_event(Task(id=task_id, context_id=ctx,
                                                 status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        updater = TaskUpdater(event_queue, task_id, ctx)
        await updater.start_work()
        for i, piece in enumerate(["sdk ", "says: ", text]):
            if i and "slowly" in text:
                await asyncio.sleep(0.4)
            await updater.add_artifact([Part(text=piece)], artifact_id="answer", append=i > 0, last_chunk=i == 2)
        await updater.complete(Message(message_id="done", role=Role.ROLE_AGENT, parts=[Part(text="done")]))

    async def cancel(self, context: RequestContext, event_queue) -> None:  # type: ignore[no-untyped-def]
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def main() -> None:
    port, token = int(sys.argv[1]), sys.argv[2]
    card = AgentCard(name="sdk-echo", description="a2a-sdk's minimal echo agent", version="1.0",
                     supported_interfaces=[AgentInterface(url=f"http://127.0.0.1:{port}/",
                                                          protocol_binding="JSONRPC", protocol_version="1.0")],
                     capabilities=AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
                     default_output_modes=["text/plain"],
                     skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["echo"])])
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    seen: dict[str, str] = {}

    async def last_bearer(_request: Request) -> Response:
        return JSONResponse(seen)

    inner = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    inner.add_route("/seen", last_bearer)

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and scope["method"] == "POST":
            given = dict(scope["headers"]).get(b"authorization", b"").decode()
            seen["authorization"] = given
            if given != f"Bearer {token}":
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
        await inner(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
