"""A loopback test channel: the far side of the executor's delivery, recorded to a file.

Inbound messages arrive as JSON on its webhook (``POST /channels/loop/<account>/webhook``);
every send is appended to ``outbox`` (JSON lines). Registered in the gateway subprocess by
``tests/support/loop_site/sitecustomize.py`` (put that folder on ``PYTHONPATH``).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.base import Capability, Channel, Inbound, InboundHandler, Sent
from channels.environment import ChannelEnvironment


class LoopChannel(Channel):
    name = "loop"
    capabilities = frozenset({Capability.SEND, Capability.REPLY, Capability.THREAD_REPLY, Capability.TYPING})

    def __init__(self, account_id: str, on_inbound: InboundHandler, outbox: Path, text_limit: int,
                 slow_text: str | None = None) -> None:
        super().__init__(account_id, on_inbound)
        self.outbox = outbox
        self.text_limit = text_limit
        self.slow_text = slow_text  # sends containing this take 3 s (a crash can land mid-send)
        self.count = 0

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> LoopChannel:
        return cls(account_id, env.receive, Path(settings["outbox"]), int(settings.get("textLimit", 4000)),
                   settings.get("slowText"))

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def _record(self, rec: dict[str, Any]) -> None:
        with self.outbox.open("a") as fh:
            fh.write(json.dumps({**rec, "ts": time.time()}) + "\n")

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None, silent: bool = False) -> Sent:
        if self.slow_text and self.slow_text in text:
            await asyncio.sleep(3)
        self.count += 1
        self._record({"op": "send", "account": self.account_id, "to": to, "text": text, "threadId": thread_id,
                      "replyToId": reply_to_id})
        return Sent(message_id=f"out-{self.count}", chat_id=to, thread_id=thread_id)

    async def typing(self, to: str, *, thread_id: str | None = None) -> None:
        self._record({"op": "typing", "to": to})

    async def handle_webhook(self, request: Request) -> Response:
        body = await request.json()
        msg = Inbound(channel=self.name, account_id=self.account_id, sender_id=body["sender"],
                      chat_id=body.get("chat", body["sender"]), chat_type=body.get("chatType", "dm"),
                      message_id=body.get("id") or uuid.uuid4().hex, text=body["text"], sender_name=body.get("name"),
                      thread_id=body.get("thread"), mentioned=True, ts=time.time())
        await self.on_inbound(msg)
        return JSONResponse({"ok": True})
