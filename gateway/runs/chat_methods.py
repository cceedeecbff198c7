"""Chat methods for interactive clients (the web chat page, the TUI): send, history, abort."""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import Field, model_validator

from gateway.access import Access
from gateway.agents.workspace import ATTACHMENTS_DIR
from gateway.composition.ports import CHAT_DECISIONS, DECISION_REFUSED, VOICE
from gateway.dispatch.dispatcher import READ, WRITE, CallContext, Params, method
from gateway.protocol import Forbidden, InvalidRequest
from gateway.runs import Origin, RunRequest
from gateway.runs.agent_methods import delivery_origin
from gateway.sessions.methods import check_visible, claim_session, is_owner
from gateway.sessions.service import parse_key
from gateway.sessions.store import SessionRepo
from gateway.webchat.files import store_file

MAX_CLIP_BYTES = 10 * 1024 * 1024
MAX_UPLOADS = 5
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
MAX_UPLOADS_TOTAL = 15 * 1024 * 1024  # with base64's third more, one message stays under gateway.maxPayload
CLIP_TYPES = {"audio/webm": ".webm", "audio/ogg": ".ogg", "audio/mp4": ".m4a", "audio/mpeg": ".mp3",
              "audio/wav": ".wav"}


class VoiceClip(Params):
    """A recording from the page's microphone button."""

    base64: str = Field(min_length=4, max_length=MAX_CLIP_BYTES * 4 // 3 + 4)
    mimeType: str = Field("audio/webm", max_length=100)


class Upload(Params):
    """A file attached on the page (picked, pasted or dropped): the agent finds it in its workspace."""

    name: str = Field(min_length=1, max_length=255)
    mimeType: str = Field("application/octet-stream", max_length=128)
    base64: str = Field(min_length=1, max_length=MAX_UPLOAD_BYTES * 4 // 3 + 4)


class SendParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    message: str = Field("", max_length=200_000)
    audio: VoiceClip | None = None
    attachments: list[Upload] = Field(default_factory=list, max_length=MAX_UPLOADS)
    idempotencyKey: str = Field(min_length=1, max_length=256)
    deliver: bool = False
    thinking: str | None = Field(None, max_length=32)
    timeoutMs: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _something(self) -> SendParams:
        if not self.message and self.audio is None and not self.attachments:
            raise ValueError("message: give a message (or a voice clip in audio, or attachments)")
        return self


@dataclass(frozen=True, slots=True)
class UploadsRefused:
    """Why files do not fit one ``chat.send``: ``index`` names the file at fault; None, their number or sum."""

    index: int | None
    reason: str


def uploads_refused(sizes: Sequence[int]) -> UploadsRefused | None:
    """Whether files of these sizes (bytes) fit one message's ``attachments``. Doors that turn another protocol's
    files into attachments (A2A, the OpenAI-compatible API) ask before anything is stored, so that their refusal
    names their own field rather than ``attachments[i]``."""
    if len(sizes) > MAX_UPLOADS:
        return UploadsRefused(None, f"more than {MAX_UPLOADS} files in one message")
    for i, size in enumerate(sizes):
        if size > MAX_UPLOAD_BYTES:
            return UploadsRefused(i, f"larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB")
    if sum(sizes) > MAX_UPLOADS_TOTAL:
        return UploadsRefused(None, f"more than {MAX_UPLOADS_TOTAL // (1024 * 1024)} MB of files in one message; "
                                    "send them in several")
    return None


def as_upload(name: str, mime_type: str, data: bytes) -> dict[str, str]:
    """One file as ``chat.send``'s ``attachments`` item (``Upload``), its name and type made fit: the last path
    component, at most 255 characters (the stored copy's name is made safe again); a type of at most 128, else
    ``application/octet-stream``."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()[-255:] or "file"
    kind = mime_type.strip()
    if not kind or len(kind) > 128:
        kind = "application/octet-stream"
    return {"name": base, "mimeType": kind, "base64": base64.b64encode(data).decode("ascii")}


def _save_upload(upload: Upload, index: int, state: Path) -> str:
    """Write an attached file under the web chat's media folder, named so the agent sees what it is."""
    field = f"attachments[{index}]"
    try:
        data = base64.b64decode(upload.base64, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(f"{field}.base64: not base64", details={"field": f"{field}.base64"}) from None
    if len(data) > MAX_UPLOAD_BYTES:
        raise InvalidRequest(f"{field}: {upload.name} is larger than 10 MB", details={"field": field})
    folder = state / "media" / "webchat"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in Path(upload.name).name).lstrip(".") or "file"
    path = folder / f"{uuid.uuid4().hex[:8]}-{name[-120:]}"
    path.write_bytes(data)
    return str(path)


def _check_total(uploads: list[Upload]) -> None:
    total = sum(len(u.base64) * 3 // 4 for u in uploads)
    if total > MAX_UPLOADS_TOTAL:
        raise InvalidRequest("attachments: more than 15 MB in one message; send the files in several",
                             details={"field": "attachments"})


def _save_clip(clip: VoiceClip, state: Path) -> str:
    """Write a recording under the web chat's media folder (pruned with the channels' media)."""
    try:
        data = base64.b64decode(clip.base64, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest("audio.base64: not base64", details={"field": "audio.base64"}) from None
    if len(data) > MAX_CLIP_BYTES:
        raise InvalidRequest("audio: the recording is larger than 10 MB", details={"field": "audio"})
    folder = state / "media" / "webchat"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    suffix = CLIP_TYPES.get(clip.mimeType.split(";", 1)[0].strip().lower(), ".audio")
    path = folder / f"voice-{uuid.uuid4().hex[:12]}{suffix}"
    path.write_bytes(data)
    return str(path)


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""An idempotency key usable as a run id: it names files in the runs folder, and fits ``agent_runs.id``."""


async def _run_id_from(idempotency_key: str, ctx: CallContext) -> str | None:
    """The run id a turn started by this message gets: its idempotency key, as OpenClaw does (its Control UI
    matches the message it sent to the turn by it), unless the key cannot name a run or already names one
    (a key reused after the idempotency window, or by another client); then a fresh id."""
    if not _RUN_ID.fullmatch(idempotency_key) or idempotency_key.startswith("msg-"):  # msg-<id>: posted messages
        return None
    if idempotency_key in ctx.runs.runs:
        return None
    async with ctx.db.session() as s:
        return None if await SessionRepo.get_run(s, idempotency_key) is not None else idempotency_key


@method("chat.send", access=Access("session", "write", ("sessionKey",)),
        params=SendParams, scope=WRITE, idempotent=True)
async def chat_send(p: SendParams, ctx: CallContext) -> dict[str, Any]:
    """Send a message into a session; ``queued`` when it joins the turn after the running one."""
    svc = ctx.sessions
    key = svc.normalize_key(p.sessionKey)
    if p.attachments:  # before the session is made: a refused message stores nothing
        _check_total(p.attachments)
    await claim_session(ctx, key)  # a person signed in writes only to their own sessions (gateway.people)
    await svc.ensure(key)
    # deliver: the reply goes to the chat the session came from (Telegram, Discord ...). Otherwise the page is
    # the chat, and the agent's message tools (reply, react, send a file ...) act on it.
    origin = await delivery_origin(ctx, key, channel=None, account_id=None, to=None, thread_id=None) \
        if p.deliver else None
    deliver = origin is not None
    if origin is None:
        origin = Origin(channel="webchat", account_id=None, to=key, chat_type="dm")
    message, heard = p.message, None
    chat = ctx.services.find(CHAT_DECISIONS)
    if chat is not None and p.audio is None and not p.attachments:  # /approve, or a pending question's answer
        who = ctx.caller.display_name or ctx.caller.device_id or ctx.caller.client_id
        answer = await chat.handle(key, message, sender=who, channel="webchat", is_owner=is_owner(ctx),
                                   chat_type="dm")
        if answer == DECISION_REFUSED:  # someone else's request: refused, not "decided"
            raise Forbidden(answer, details={"code": "APPROVAL_FORBIDDEN", "field": "message"})
        if answer is not None:  # decided here: no turn; the outcome is told in the session's chat
            if answer and origin.channel == "webchat":
                await ctx.agents.notify(origin, answer, key)
            return {"runId": f"decision-{uuid.uuid4().hex[:12]}", "status": "decided", "sessionKey": key,
                    **({"notice": answer} if answer else {})}
    files: tuple[str, ...] = ()
    if p.audio is not None:  # a recording: the agent gets the file and, when it can be had, the words
        path = await asyncio.to_thread(_save_clip, p.audio, ctx.state_dir)
        files = (path,)
        voice = ctx.services.find(VOICE)
        note, error = await voice.hear(path) if voice is not None else ("", None)
        message = f"{message}\n[attachment: voice {ATTACHMENTS_DIR}/{Path(path).name}]{note}".strip()
        heard = {"transcript": note.strip(), **({"transcriptError": error} if error else {})}
    shown: list[dict[str, Any]] = []
    if p.attachments:  # the agent reads them in its workspace; the page shows the stored copies
        for i, upload in enumerate(p.attachments):
            path = await asyncio.to_thread(_save_upload, upload, i, ctx.state_dir)
            files += (path,)
            kind = "image" if upload.mimeType.startswith("image/") else "file"
            message = f"{message}\n[attachment: {kind} {ATTACHMENTS_DIR}/{Path(path).name}]".strip()
            shown.append(await store_file(ctx.db, key, path, name=upload.name))
    req = RunRequest(session_key=key, agent_id=parse_key(key)[0], message=message, source="chat",
                     run_id=await _run_id_from(p.idempotencyKey, ctx),
                     is_owner=is_owner(ctx), origin=origin, deliver=deliver, files=files,
                     voice_in=p.audio is not None, entry_meta={"attachments": shown} if shown else None)
    run, status = await ctx.runs.submit(req)
    out: dict[str, Any] = {"runId": run.id, "status": status, "sessionKey": key, **(heard or {})}
    if req.entry_id is not None:
        out["messageId"] = str(req.entry_id)
        # Other pages open on this session show the message too (the sender's page knows its idempotency key).
        ctx.broadcast("chat.user", {"sessionKey": key, "runId": run.id, "messageId": out["messageId"],
                                            "text": message, "idempotencyKey": p.idempotencyKey,
                                            **({"attachments": shown} if shown else {})}, scope=READ)
    if shown:
        out["attachments"] = shown
    return out


class HistoryParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    limit: int | None = Field(None, ge=1, le=1000)
    maxBytes: int | None = Field(None, ge=1, description="Drop the oldest messages until the answer's messages fit "
                                                         "in this many bytes of JSON (OpenClaw's Control UI sends it).")


@method("chat.history", access=Access("session", "read", ("sessionKey",)),
        params=HistoryParams, scope=READ, baseline=True)
async def chat_history(p: HistoryParams, ctx: CallContext) -> dict[str, Any]:
    """The session's transcript, oldest first (the last ``limit`` entries, within ``maxBytes``)."""
    key = ctx.sessions.normalize_key(p.sessionKey)
    await check_visible(ctx, key)
    async with ctx.db.reading() as s:
        entries = await SessionRepo.history(s, key, p.limit or 200)
    messages = [e.to_dict() for e in entries]
    if p.maxBytes is not None:
        sizes = [len(orjson.dumps(m)) + 1 for m in messages]
        total, first = sum(sizes), 0
        while first < len(messages) and total > p.maxBytes:
            total -= sizes[first]
            first += 1
        messages = messages[first:]
    return {"sessionKey": key, "messages": messages}


class AbortParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    runId: str | None = Field(None, min_length=1, max_length=64)


@method("chat.abort", access=Access("session", "write", ("sessionKey",)), params=AbortParams, scope=WRITE)
async def chat_abort(p: AbortParams, ctx: CallContext) -> dict[str, Any]:
    """Stop the session's running turn (or the given run) and drop messages waiting for the next turn.

    ``runIds`` are the runs stopped: here, and with several replicas also the session's runs that another
    replica holds, to which the request is passed (``forwarded: true``); a turn stopped there ends with
    its usual ``agent``/``chat`` events.
    """
    key = ctx.sessions.normalize_key(p.sessionKey)
    await check_visible(ctx, key)
    aborted, forwarded = await ctx.runs.abort_everywhere(key, p.runId)
    return {"ok": True, "aborted": bool(aborted), "runIds": aborted, "sessionKey": key, "forwarded": forwarded}
