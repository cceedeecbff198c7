"""Message methods behind the ten ``message_*`` MCP tools: send, reply, threadReply, broadcast, react,
delete, sendAttachment, sendWithEffect, pin, read.

Each is routed to one running channel account (``channel`` + optional ``accountId``) through the
chat platforms (``ctx.platforms``, the channel manager), which splits long text at the channel's limit
and stores every message so ``message.read`` works on every channel. The MCP shim fills ``channel``,
``accountId``, ``to`` and ``threadId`` from the run's context unless the tool names a target.
Sending methods answer at least ``{ok, channel, to, messageId}`` so the shim can record side effects.
The reference's colon names (``message:send`` ...) are accepted as aliases.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from gateway.access import Access
from gateway.composition.ports import AGENT_HOSTS
from gateway.dispatch.dispatcher import READ, WRITE, CallContext, Params, method
from gateway.platforms import MAX_ATTACHMENT_BYTES
from gateway.protocol import InvalidRequest, RpcError
from gateway.sandbox.open_beneath import FileBytes
from gateway.sandbox.reach import read_run_file

__all__ = [
    "BroadcastParams",
    "DeleteParams",
    "PinParams",
    "ReactParams",
    "ReadParams",
    "ReplyParams",
    "SendAttachmentParams",
    "SendParams",
    "SendWithEffectParams",
    "ThreadReplyParams",
]


def _id_to_str(value: Any) -> Any:
    # Agents often pass numeric ids (Telegram chat ids, message ids) as JSON numbers.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Ident = Annotated[str, BeforeValidator(_id_to_str), Field(min_length=1, max_length=256)]
Text = Annotated[str, Field(min_length=1, max_length=100_000)]


class _Target(Params):
    channel: str = Field(min_length=1, max_length=64, description="Channel name, e.g. telegram, discord, webchat.")
    accountId: Ident | None = Field(None, description="Account of that channel; the default account when unset.")
    sessionKey: str | None = Field(None, max_length=512, description="The calling run's session (for the record).")
    idempotencyKey: str | None = Field(None, max_length=256)


class SendParams(_Target):
    to: Ident = Field(description="Chat or user id to send to.")
    message: Text
    media: str | None = Field(None, min_length=1, max_length=4096, description="URL or file path to attach.")
    threadId: Ident | None = None


class ReplyParams(_Target):
    to: Ident
    message: Text
    replyToId: Ident | None = None
    threadId: Ident | None = None


class ThreadReplyParams(_Target):
    to: Ident
    message: Text
    threadId: Ident
    replyToId: Ident | None = None


class BroadcastParams(_Target):
    targets: list[Ident] = Field(min_length=1, max_length=100)
    message: Text


class ReactParams(_Target):
    to: Ident
    messageId: Ident
    emoji: str = Field(max_length=32, description="Emoji to set; an empty string removes the bot's reaction.")


class DeleteParams(_Target):
    to: Ident
    messageId: Ident


class SendAttachmentParams(_Target):
    to: Ident
    file: str = Field(min_length=1, max_length=4096, description="http(s) URL or a local file path.")
    caption: str | None = Field(None, max_length=4096)
    threadId: Ident | None = None


class SendWithEffectParams(_Target):
    to: Ident
    message: Text
    effectId: Ident
    threadId: Ident | None = None


class PinParams(_Target):
    to: Ident
    messageId: Ident


class ReadParams(_Target):
    to: Ident | None = Field(None, description="Chat to read; ``channelId`` is accepted as its other name.")
    channelId: Ident | None = None
    threadId: Ident | None = None
    limit: int = Field(20, ge=1, le=200)

    @model_validator(mode="after")
    def _need_chat(self) -> ReadParams:
        if self.to is None:
            self.to = self.channelId
        if self.to is None:
            raise ValueError("to (or channelId) is required: which chat to read")
        return self


def _sent(p: _Target, to: str, sent: list[Any]) -> dict[str, Any]:
    first = sent[0]
    out: dict[str, Any] = {
        "ok": True,
        "channel": p.channel,
        "accountId": p.accountId,
        "to": to,
        "messageId": first.message_id,
    }
    if len(sent) > 1:
        out["messageIds"] = [s.message_id for s in sent]
    if first.thread_id:
        out["threadId"] = first.thread_id
    return out


async def _run_file(ctx: CallContext, file: str, field: str) -> str | FileBytes:
    """A file an agent run names, only where the run itself can see it, as its bytes read once
    (``gateway.sandbox.reach``), on its node for a run whose turn is there: the channel never reads the run's path
    again."""
    hosts = ctx.services.find(AGENT_HOSTS)
    return await read_run_file(ctx.caller, file, field=field, state_dir=ctx.state_dir, max_bytes=MAX_ATTACHMENT_BYTES,
                               from_node=hosts.read_file if hosts is not None else None)


@method("message.send", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=SendParams, scope=WRITE, idempotent=True, aliases=("message:send",), baseline=True)
async def send(p: SendParams, ctx: CallContext) -> dict[str, Any]:
    """Send text (and optionally one attachment) to a chat."""
    mgr = ctx.platforms
    media = await _run_file(ctx, p.media, "media") if p.media else None  # refused before any of it is sent
    sent = await mgr.send_text(p.channel, p.accountId, p.to, p.message, thread_id=p.threadId,
                               session_key=p.sessionKey)
    if media:
        sent.append(await mgr.send_attachment(p.channel, p.accountId, p.to, media, thread_id=p.threadId,
                                              session_key=p.sessionKey))
    return _sent(p, p.to, sent)


@method("message.reply", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=ReplyParams, scope=WRITE, idempotent=True, aliases=("message:reply",), baseline=True)
async def reply(p: ReplyParams, ctx: CallContext) -> dict[str, Any]:
    """Reply in a chat, quoting ``replyToId`` when given."""
    sent = await ctx.platforms.send_text(p.channel, p.accountId, p.to, p.message, thread_id=p.threadId,
                                         reply_to_id=p.replyToId, session_key=p.sessionKey, op="reply")
    return _sent(p, p.to, sent)


@method("message.threadReply", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=ThreadReplyParams, scope=WRITE, idempotent=True,
        aliases=("message:threadReply", "message:thread_reply"), baseline=True)
async def thread_reply(p: ThreadReplyParams, ctx: CallContext) -> dict[str, Any]:
    """Reply inside a thread (a Telegram forum topic, a Discord thread)."""
    sent = await ctx.platforms.send_text(p.channel, p.accountId, p.to, p.message, thread_id=p.threadId,
                                         reply_to_id=p.replyToId, session_key=p.sessionKey, op="threadReply")
    return _sent(p, p.to, sent)


@method("message.broadcast", access=(Access("chat", "write", each=True), Access("session", "write", ("sessionKey",))),
        params=BroadcastParams, scope=WRITE, idempotent=True,
        aliases=("message:broadcast",), baseline=True)
async def broadcast(p: BroadcastParams, ctx: CallContext) -> dict[str, Any]:
    """Send the same text to several chats; one failing target does not stop the others."""
    mgr = ctx.platforms
    results: list[dict[str, Any]] = []
    first_error: RpcError | None = None
    for target in dict.fromkeys(p.targets):
        try:
            await ctx.access.check(ctx.caller, "write", ctx.access.chat(p.channel, target), "targets")
            sent = await mgr.send_text(p.channel, p.accountId, target, p.message, session_key=p.sessionKey)
        except RpcError as err:
            first_error = first_error or err
            results.append({"to": target, "ok": False, "error": err.shape()})
            continue
        results.append({"to": target, "ok": True, "messageId": sent[0].message_id})
    delivered = [r for r in results if r["ok"]]
    if not delivered and first_error is not None:
        raise first_error
    return {
        "ok": len(delivered) == len(results),
        "channel": p.channel,
        "to": [r["to"] for r in delivered],
        "messageId": delivered[0]["messageId"],
        "results": results,
        "delivered": len(delivered),
        "failed": len(results) - len(delivered),
    }


@method("message.react", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=ReactParams, scope=WRITE, idempotent=True, aliases=("message:react",), baseline=True)
async def react(p: ReactParams, ctx: CallContext) -> dict[str, Any]:
    """Set (or with an empty emoji, remove) the bot's reaction on a message."""
    await ctx.platforms.react(p.channel, p.accountId, p.to, p.messageId, p.emoji)
    return {"ok": True, "channel": p.channel, "to": p.to, "messageId": p.messageId, "emoji": p.emoji,
            "removed": p.emoji == ""}


@method("message.delete", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=DeleteParams, scope=WRITE, idempotent=True, aliases=("message:delete",), baseline=True)
async def delete(p: DeleteParams, ctx: CallContext) -> dict[str, Any]:
    """Delete a message (the bot's own, or any where it has the right)."""
    await ctx.platforms.delete(p.channel, p.accountId, p.to, p.messageId)
    return {"ok": True, "channel": p.channel, "to": p.to, "messageId": p.messageId, "deleted": True}


@method("message.sendAttachment", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=SendAttachmentParams, scope=WRITE, idempotent=True,
        aliases=("message:sendAttachment", "message:send_attachment"), baseline=True)
async def send_attachment(p: SendAttachmentParams, ctx: CallContext) -> dict[str, Any]:
    """Send a file from a URL or a local path, with an optional caption."""
    file = await _run_file(ctx, p.file, "file")
    sent = await ctx.platforms.send_attachment(p.channel, p.accountId, p.to, file, caption=p.caption,
                                               thread_id=p.threadId, session_key=p.sessionKey)
    return _sent(p, p.to, [sent])


@method("message.sendWithEffect", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=SendWithEffectParams, scope=WRITE, idempotent=True,
        aliases=("message:sendWithEffect", "message:send_with_effect"), baseline=True)
async def send_with_effect(p: SendWithEffectParams, ctx: CallContext) -> dict[str, Any]:
    """Send text with a visual message effect (where the platform has them)."""
    sent = await ctx.platforms.send_text(p.channel, p.accountId, p.to, p.message, thread_id=p.threadId,
                                         effect_id=p.effectId, session_key=p.sessionKey, op="sendWithEffect")
    out = _sent(p, p.to, sent)
    out["effectId"] = p.effectId
    return out


@method("message.pin", access=(Access("chat", "write"), Access("session", "write", ("sessionKey",))),
        params=PinParams, scope=WRITE, idempotent=True, aliases=("message:pin",), baseline=True)
async def pin(p: PinParams, ctx: CallContext) -> dict[str, Any]:
    """Pin a message in its chat."""
    await ctx.platforms.pin(p.channel, p.accountId, p.to, p.messageId)
    return {"ok": True, "channel": p.channel, "to": p.to, "messageId": p.messageId, "pinned": True}


@method("message.read", access=(Access("chat", "read"), Access("session", "read", ("sessionKey",))),
        params=ReadParams, scope=READ, aliases=("message:read",), baseline=True)
async def read(p: ReadParams, ctx: CallContext) -> dict[str, Any]:
    """Recent messages of a chat, oldest first, from the gateway's store (inbound and outbound)."""
    if p.to is None:  # pragma: no cover - the validator guarantees it
        raise InvalidRequest("invalid message.read params: at /to: required")
    messages = await ctx.platforms.read(p.channel, p.accountId, p.to, limit=p.limit, thread_id=p.threadId)
    return {"channel": p.channel, "to": p.to, "messages": messages, "count": len(messages)}
