"""A peer on a2a-sdk's own client, run as a separate process by the tests: one action, its results as JSON lines.

    python -m tests.gateway.a2a.sdk_peer URL TOKEN card
    python -m tests.gateway.a2a.sdk_peer URL TOKEN stream TEXT [CONTEXT_ID [TASK_ID]]   (one line per event)
    python -m tests.gateway.a2a.sdk_peer URL TOKEN send TEXT                            (blocking SendMessage)
    python -m tests.gateway.a2a.sdk_peer URL TOKEN stream-parts|send-parts CONTEXT_ID   (the message's parts, A2A
                                                                                     1.0 JSON, read on stdin)
    python -m tests.gateway.a2a.sdk_peer URL TOKEN get TASK_ID
    python -m tests.gateway.a2a.sdk_peer URL TOKEN cancel TASK_ID
    python -m tests.gateway.a2a.sdk_peer URL TOKEN subscribe TASK_ID                   (one line per event)

An error is one line ``{"error": ..., "type": ...}`` and exit status 2. TOKEN ``-`` sends no credential.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
)
from google.protobuf.json_format import MessageToDict, ParseDict


def emit(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(url: str, token: str, action: str, args: list[str]) -> int:
    headers = {"authorization": f"Bearer {token}"} if token != "-" else {}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        if action == "card":
            card = await A2ACardResolver(http, url).get_agent_card()
            emit(MessageToDict(card))
            return 0
        streaming = action not in ("send", "send-parts")
        client = await ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create_from_url(url)
        if action in ("stream", "send"):
            message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=args[0])],
                              context_id=args[1] if len(args) > 1 else "", task_id=args[2] if len(args) > 2 else "")
            async for event in client.send_message(SendMessageRequest(message=message)):
                emit(MessageToDict(event))
            return 0
        if action in ("stream-parts", "send-parts"):
            message = ParseDict({"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "contextId": args[0],
                                 "parts": json.loads(sys.stdin.read())}, Message())
            async for event in client.send_message(SendMessageRequest(message=message)):
                emit(MessageToDict(event))
            return 0
        if action == "get":
            emit(MessageToDict(await client.get_task(GetTaskRequest(id=args[0]))))
            return 0
        if action == "cancel":
            emit(MessageToDict(await client.cancel_task(CancelTaskRequest(id=args[0]))))
            return 0
        if action == "subscribe":
            async for event in client.subscribe(SubscribeToTaskRequest(id=args[0])):
                emit(MessageToDict(event))
            return 0
    raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])))
    except Exception as exc:  # the test reads what the SDK raised
        emit({"error": str(exc), "type": type(exc).__name__})
        sys.exit(2)
