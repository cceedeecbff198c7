"""A loopback fake of Meta's WhatsApp Cloud API: the far side of the gateway's WhatsApp channel.

Serves the Graph API endpoints the channel calls (``GET /{version}/{phone-number-id}``, ``POST .../messages``,
``POST .../media``, ``GET /{version}/{media-id}`` and the media download its URL points at), each checking the
bearer token, in its own thread and event loop, recording what it was sent. The other way, it plays Meta's
webhook: ``deliver`` posts a batch of messages to the gateway, signed with the app secret as Meta signs it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.asgi_thread import ThreadedServer
from tests.support.gateway_proc import free_port

PHONE_NUMBER_ID = "106540352242922"
TOKEN = "EAAfake-loopback-token"
APP_SECRET = "0123456789abcdef0123456789abcdef"
VERIFY_TOKEN = "verify-me-please"


@dataclass
class Sent:
    """One ``POST /{phone-number-id}/messages`` as the fake received it."""

    body: dict[str, Any]
    message_id: str = ""

    @property
    def to(self) -> str:
        return str(self.body.get("to", ""))

    @property
    def type(self) -> str:
        return str(self.body.get("type") or ("read" if self.body.get("status") == "read" else ""))

    @property
    def text(self) -> str:
        if self.type == "text":
            return str(self.body["text"]["body"])
        if self.type == "interactive":
            return str(self.body["interactive"]["body"]["text"])
        return ""


@dataclass
class Upload:
    name: str
    mime: str
    data: bytes
    media_id: str


@dataclass
class FakeWhatsApp:
    """The fake server plus the knobs tests turn."""

    port: int = field(default_factory=free_port)
    sent: list[Sent] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)
    media: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # media id -> (bytes, mime)
    closed: set[str] = field(default_factory=set)  # recipients the API answers 131047 for (window closed)
    downloads: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._server: ThreadedServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def channel_config(self, **extra: Any) -> dict[str, Any]:
        return {"phoneNumberId": PHONE_NUMBER_ID, "accessToken": TOKEN, "appSecret": APP_SECRET,
                "verifyToken": VERIFY_TOKEN, "apiBaseUrl": self.url, **extra}

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeWhatsApp:
        app = Starlette(routes=[
            Route("/download/{media_id}", self._download, methods=["GET"]),
            Route("/{version}/{node}/messages", self._messages, methods=["POST"]),
            Route("/{version}/{node}/media", self._upload, methods=["POST"]),
            Route("/{version}/{node}", self._node, methods=["GET"]),
        ])
        self._server = ThreadedServer(app, self.port, "fake-whatsapp")
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    # -- the webhook side: what Meta posts to the gateway -----------------------------------------

    def message(self, sender: str, kind: str = "text", *, text: str = "", ts: float | None = None,
                reply_to: str | None = None, **content: Any) -> dict[str, Any]:
        """One inbound message object; ``content`` is the body under its type (e.g. ``image={"id": ...}``)."""
        msg: dict[str, Any] = {"from": sender, "id": f"wamid.IN{next(self._ids):06d}",
                               "timestamp": str(int(ts if ts is not None else time.time())), "type": kind}
        if kind == "text":
            msg["text"] = {"body": text}
        msg.update(content)
        if reply_to:
            msg["context"] = {"from": PHONE_NUMBER_ID, "id": reply_to}
        return msg

    def webhook_body(self, *messages: dict[str, Any], name: str = "Ada", number: str = PHONE_NUMBER_ID) -> bytes:
        """A webhook's body as Meta posts it: the messages to the business number ``number``, from people."""
        contacts = [{"profile": {"name": name}, "wa_id": m["from"]} for m in messages]
        value = {"messaging_product": "whatsapp",
                 "metadata": {"display_phone_number": "15550100", "phone_number_id": number},
                 "contacts": contacts, "messages": list(messages)}
        entry = {"id": "WABA1", "changes": [{"value": value, "field": "messages"}]}
        return json.dumps({"object": "whatsapp_business_account", "entry": [entry]}).encode()

    async def deliver(self, gateway_http: str, *messages: dict[str, Any], account: str = "default",
                      secret: str = APP_SECRET, name: str = "Ada", number: str = PHONE_NUMBER_ID) -> httpx.Response:
        """POST the messages to the gateway's webhook, signed with ``secret`` as Meta signs them."""
        body = self.webhook_body(*messages, name=name, number=number)
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        async with httpx.AsyncClient() as http:
            return await http.post(f"{gateway_http}/channels/whatsapp/{account}/webhook", content=body,
                                   headers={"Content-Type": "application/json", "X-Hub-Signature-256": signature})

    # -- assertions -----------------------------------------------------------------------------

    async def wait_sent(self, pred: Any, what: str, timeout: float = 20.0) -> Sent:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for s in list(self.sent):
                if pred(s):
                    return s
            await asyncio.sleep(0.05)
        raise AssertionError(f"the fake got no {what} within {timeout}s; last: {[s.body for s in self.sent[-6:]]}")

    async def wait_text(self, to: str, text: str, timeout: float = 20.0) -> Sent:
        return await self.wait_sent(lambda s: s.to == to and s.type == "text" and s.text == text, repr(text), timeout)

    # -- the Graph API --------------------------------------------------------------------------

    @staticmethod
    def _error(status: int, code: int, message: str, details: str = "") -> JSONResponse:
        err: dict[str, Any] = {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "Afake"}
        if details:
            err["error_data"] = {"messaging_product": "whatsapp", "details": details}
        return JSONResponse({"error": err}, status_code=status)

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {TOKEN}"

    async def _node(self, request: Request) -> Response:
        if not self._authorized(request):
            return self._error(401, 190, "Invalid OAuth access token")
        node = request.path_params["node"]
        if node == PHONE_NUMBER_ID:
            return JSONResponse({"display_phone_number": "+1 555-0100", "verified_name": "Test Shop", "id": node})
        if node in self.media:
            data, mime = self.media[node]
            return JSONResponse({"url": f"{self.url}/download/{node}", "mime_type": mime, "file_size": len(data),
                                 "sha256": hashlib.sha256(data).hexdigest(), "id": node,
                                 "messaging_product": "whatsapp"})
        return self._error(400, 100, "Unsupported get request", f"Object with ID '{node}' does not exist")

    async def _download(self, request: Request) -> Response:
        media_id = request.path_params["media_id"]
        if not self._authorized(request) or media_id not in self.media:
            return Response(status_code=404)
        self.downloads.append(media_id)
        data, mime = self.media[media_id]
        return Response(data, media_type=mime)

    async def _messages(self, request: Request) -> Response:
        if not self._authorized(request):
            return self._error(401, 190, "Invalid OAuth access token")
        if request.path_params["node"] != PHONE_NUMBER_ID:
            return self._error(400, 100, "Invalid parameter", "unknown phone number id")
        body = json.loads(await request.body())
        record = Sent(body)
        self.sent.append(record)
        if body.get("status") == "read":
            return JSONResponse({"success": True})
        if body.get("to") in self.closed and body.get("type") not in ("template", "reaction"):
            return self._error(400, 131047, "Re-engagement message",
                               "Message failed to send because more than 24 hours have passed since the customer "
                               "last replied to this number.")
        record.message_id = f"wamid.OUT{next(self._ids):06d}"
        return JSONResponse({"messaging_product": "whatsapp", "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                             "messages": [{"id": record.message_id}]})

    async def _upload(self, request: Request) -> Response:
        if not self._authorized(request):
            return self._error(401, 190, "Invalid OAuth access token")
        form = await request.form()
        file = form.get("file")
        if form.get("messaging_product") != "whatsapp" or not isinstance(file, UploadFile):
            return self._error(400, 100, "Invalid parameter", "messaging_product and file are required")
        data = await file.read()
        media_id = f"{900000 + next(self._ids)}"
        self.uploads.append(Upload(file.filename or "", str(form.get("type") or ""), data, media_id))
        self.media[media_id] = (data, str(form.get("type") or "application/octet-stream"))
        return JSONResponse({"id": media_id})
