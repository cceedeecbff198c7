"""The shared skeleton of the loopback fake model APIs (``fake_anthropic``, ``fake_openai``, ``fake_gemini``).

Each fake only knows its API's wire format: it subclasses :class:`FakeHTTPServer` and answers
``respond(method, path, raw)``. The base runs a threaded HTTP/1.1 server on 127.0.0.1 (a free
port from the kernel), logs every GET/POST path in ``paths``, and gives thread-safe request logs.
:func:`script` is the conversation language every fake understands, so a test prompt means the
same thing whichever CLI reads it.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FakeHTTPServer", "Reply", "json_reply", "script", "sse_data", "sse_event"]

Reply = tuple[int, bytes, str]
"""(status, body, content type)."""

_CALL = re.compile(r"CALL (\w+) (\{.*?\})\s*$", re.MULTILINE)


def json_reply(obj: Any, status: int = 200) -> Reply:
    return status, (obj if isinstance(obj, bytes) else json.dumps(obj).encode()), "application/json"


def sse_event(kind: str, data: dict[str, Any]) -> str:
    """A named SSE event whose JSON also carries ``type: kind`` (the Anthropic and Responses style)."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def sse_data(obj: Any, sep: str = "\n\n") -> str:
    """An unnamed ``data:`` SSE event (the Chat Completions and Gemini style)."""
    return f"data: {obj if isinstance(obj, str) else json.dumps(obj)}{sep}"


def script(text: str, tools: list[str], result: str | None, *, then: bool = True) -> dict[str, str]:
    """The fake model's next step for this turn's user ``text``, the offered ``tools`` and the last tool ``result``.

    ``CALL <tool> <json>`` (and no result yet) calls the first offered tool whose name ends with
    ``<tool>``: ``{"tool": name, "args": "<json>"}``. Otherwise ``{"text": ...}``: after a result,
    ``THEN <text>`` from the prompt (if ``then``) or ``done: <result[:200]>``; else ``REPLY <text>``
    or ``ok``.
    """
    call = _CALL.search(text)
    if call and result is None:
        name = next((n for n in tools if n.endswith(call.group(1))), None)
        if name:
            return {"tool": name, "args": call.group(2)}
        return {"text": f"tool {call.group(1)} not offered; tools: {', '.join(tools)}"}
    if result is not None:
        after = re.search(r"THEN (.+)", text) if then else None
        return {"text": after.group(1).strip() if after else "done: " + result[:200]}
    reply = re.search(r"REPLY (.+)", text)
    return {"text": reply.group(1).strip() if reply else "ok"}


class FakeHTTPServer:
    """``with Fake() as api:`` serves on ``api.url`` until the block ends.

    Subclasses implement :meth:`respond`; returning ``None`` answers 501 (a method the API lacks).
    ``headers`` go on every answer.
    """

    headers: dict[str, str] = {}

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.seen_headers: list[dict[str, str]] = []
        """Each request's headers (lower-case names): what credential arrived upstream."""
        self.bearer = ""
        """The bearer token of the request being answered (its ``respond`` may refuse it)."""
        self._lock = threading.Lock()
        self._local = threading.local()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command in ("GET", "POST"):
                    fake.record(fake.paths, f"{self.command} {self.path}")
                    fake.record(fake.seen_headers, {k.lower(): v for k, v in self.headers.items()})
                fake.bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                fake._local.headers = {k.lower(): v for k, v in self.headers.items()}
                reply = fake.respond(self.command, self.path, raw)
                if reply is None:
                    return self.send_error(501, f"Unsupported method ({self.command!r})")
                status, body, ctype = reply
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for name, value in fake.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_HEAD = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def request_headers(self) -> dict[str, str]:
        """The headers (lower-case names) of the request this thread is answering (requests may overlap)."""
        return dict(getattr(self._local, "headers", {}))

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        """The answer to one request (``path`` with its query string; ``raw`` the body)."""
        raise NotImplementedError

    def record(self, log: list[Any], item: Any) -> int:
        """Append ``item`` to ``log`` under the lock; its 1-based position (for ids like ``msg_0001``)."""
        with self._lock:
            log.append(item)
            return len(log)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
