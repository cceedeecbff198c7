"""What a peer's message gives the agent: its text, its data parts as JSON text, and its files as ``chat.send``
attachments (the web chat's uploads: the agent finds them in its workspace's ``attachments/``).

A file is taken only with its bytes in the message (A2A 1.0 ``raw``, 0.3 ``file.bytes``). A file given by URL is
refused, never fetched: fetching it would let any peer make the gateway request addresses of its choosing (its
own network, a cloud's metadata service). The door (``gateway.a2a.server``) checks the body with ``refusal``
before the SDK reads it, as it does for slash commands, so a refused message gets a JSON-RPC error naming the
part and stores nothing: no task, no session, no transcript entry. The same limits as the web chat's apply
(``uploads_refused``: 5 files, 10 MB each, 15 MB in all), within ``a2a.maxRequestBytes`` for the whole body.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types.a2a_pb2 import Message, Part
from google.protobuf.json_format import MessageToDict

from gateway.protocol import InvalidRequest
from gateway.runs.chat_methods import as_upload, uploads_refused

__all__ = ["drop_file_bytes", "message_parts", "refusal", "turn_input"]

PARTS = "params.message.parts"


def message_parts(body: Any) -> list[Any] | None:
    """The parts of a JSON-RPC body's message (``params.message.parts``), if it has a list of them."""
    params = body.get("params") if isinstance(body, dict) else None
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    return parts if isinstance(parts, list) else None


def _b64_size(value: str) -> int:
    """The bytes a base64 text decodes to (its padding aside), without decoding it."""
    return len(value.rstrip("=")) * 3 // 4


def refusal(parts: list[Any]) -> tuple[str, str] | None:
    """The field and the reason a message's files are refused, if they are: a file by URL, or files past the
    limits. Both A2A 1.0's part shape (``url``, ``raw``) and 0.3's (``file.uri``, ``file.bytes``) are read."""
    sizes: list[tuple[str, int]] = []
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            continue  # the SDK refuses a malformed part itself
        at = f"{PARTS}[{i}]"
        legacy = part.get("file") if isinstance(part.get("file"), dict) else None
        if isinstance(part.get("url"), str) or (legacy is not None and "uri" in legacy):
            field = f"{at}.url" if legacy is None else f"{at}.file.uri"
            return field, (f"{field}: a file by url is not accepted (the gateway fetches nothing a peer names); "
                           "send its bytes (raw)")
        if isinstance(part.get("raw"), str):
            sizes.append((f"{at}.raw", _b64_size(part["raw"])))
        elif legacy is not None and isinstance(legacy.get("bytes"), str):
            sizes.append((f"{at}.file.bytes", _b64_size(legacy["bytes"])))
    refused = uploads_refused([size for _, size in sizes])
    if refused is None:
        return None
    field = PARTS if refused.index is None else sizes[refused.index][0]
    return field, f"{field}: {refused.reason}"


def _json_value(value: Any) -> Any:
    """A protobuf ``Value`` read back as JSON: its whole numbers whole again (protobuf keeps every number a
    double)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def turn_input(message: Message | None) -> tuple[str, list[dict[str, str]]]:
    """The turn's text and its ``attachments``: text parts as they are, a data part as its JSON (keys sorted) on a
    line of its own, a file part with bytes as an upload. A part by URL is refused here too (``refusal`` refuses it
    at the door already).

    Raises:
        InvalidRequest: a part by URL, naming it.
    """
    if message is None:
        return "", []
    texts: list[str] = []
    files: list[dict[str, str]] = []
    for i, part in enumerate(message.parts):
        which = part.WhichOneof("content")
        if which == "text":
            texts.append(part.text)
        elif which == "data":
            texts.append(json.dumps(_json_value(MessageToDict(part.data)), ensure_ascii=False, sort_keys=True))
        elif which == "raw":
            files.append(as_upload(part.filename, part.media_type, part.raw))
        elif which == "url":
            field = f"{PARTS}[{i}].url"
            raise InvalidRequest(f"{field}: a file by url is not accepted; send its bytes", details={"field": field})
    return "\n".join(t for t in texts if t), files


def _without_bytes(part: Part) -> Part:
    if part.WhichOneof("content") != "raw":
        return part
    name = part.filename or "file"
    kept = Part(text=f"[file {name}: {len(part.raw)} bytes, given to the agent]", filename=name,
                media_type=part.media_type or "application/octet-stream")
    if part.HasField("metadata"):
        kept.metadata.CopyFrom(part.metadata)
    return kept


def drop_file_bytes(message: Message) -> None:
    """The message as a task keeps it in its history (changed in place): each file part a text part saying the
    file's name and size, with its name and type. The agent has the file; a task row, rewritten at each state,
    would otherwise carry up to 15 MB, and every ``GetTask`` send it back."""
    if any(p.WhichOneof("content") == "raw" for p in message.parts):
        parts = [_without_bytes(p) for p in message.parts]
        del message.parts[:]
        message.parts.extend(parts)
