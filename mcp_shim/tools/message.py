"""Message tools (10): send, reply, react and so on through the channel the run came from.

The channel and account come from the run's context; the conversation (``to``) too, unless the
tool names a target. Every tool that sends something records a ``message_sent`` side effect, so
the executor does not deliver the same text again at the end of the run.
"""

from __future__ import annotations

from mcp_shim.schema import array, integer, obj, string
from mcp_shim.tools._base import Call, Tool, ToolError, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("message", TOOLS)

_TARGET = "Recipient: a chat, channel or user id on this run's channel"
_MESSAGE_ID = "The message's id on its channel"


def _route(call: Call, to: str | None = None, *, need_to: bool = True) -> dict[str, Any]:
    """``channel``/``accountId``/``to`` for a message method, from the tool's target or the run's context."""
    ctx = call.ctx
    if not ctx.channel:
        raise ToolError("this run has no originating channel (REMOTECLAW_CHANNEL is not set), "
                        "so there is no channel to send through")
    target = to or ctx.to
    if not target and need_to:
        raise ToolError("this run has no current conversation (REMOTECLAW_TO is not set); "
                        "use a tool that takes a target")
    return compact(channel=ctx.channel, accountId=ctx.account_id, to=target, sessionKey=ctx.session_key)


def _once() -> dict[str, str]:
    """A fresh idempotency key: a send retried after a dropped connection is not delivered twice."""
    import uuid

    return {"idempotencyKey": str(uuid.uuid4())}


def _record(call: Call, result: Any, route: dict[str, Any], text: str | None, media: str | None = None) -> None:
    res = result if isinstance(result, dict) else {}
    call.side_effects.message_sent(tool=call.tool, provider=res.get("channel") or route.get("channel"),
                                   account_id=route.get("accountId"), to=str(res.get("to") or route.get("to")),
                                   text=text, media_url=media)


@tool("message_send", "Send a message", "Send a message (optionally with a media URL) to a chat or user.",
      obj({"target": string(_TARGET), "message": string("Message text"),
           "media": string("URL of an image or file to attach")},
          ("target", "message")),
      open_world=True)
async def message_send(call: Call, a: dict[str, Any]) -> Any:
    route = _route(call, a["target"])
    params = {**route, **_once(), "message": a["message"], **compact(media=a.get("media"))}
    result = await call.gateway("message.send", params)
    _record(call, result, route, a["message"], a.get("media"))
    return result


@tool("message_reply", "Reply in this conversation",
      "Reply in the current conversation, optionally quoting a message by id.",
      obj({"message": string("Reply text"), "replyToId": string("Id of the message to reply to")}, ("message",)),
      open_world=True)
async def message_reply(call: Call, a: dict[str, Any]) -> Any:
    route = _route(call)
    params = {**route, **_once(), "message": a["message"],
              **compact(replyToId=a.get("replyToId"), threadId=call.ctx.thread_id)}
    result = await call.gateway("message.reply", params)
    _record(call, result, route, a["message"])
    return result


@tool("message_thread_reply", "Reply in a thread", "Reply inside a thread (or topic) of the current conversation.",
      obj({"message": string("Reply text"), "threadId": string("Thread or topic id")}, ("message", "threadId")),
      open_world=True)
async def message_thread_reply(call: Call, a: dict[str, Any]) -> Any:
    route = _route(call)
    params = {**route, **_once(), "message": a["message"], "threadId": a["threadId"]}
    result = await call.gateway("message.threadReply", params)
    _record(call, result, route, a["message"])
    return result


@tool("message_broadcast", "Broadcast a message", "Send the same message to several chats or users.",
      obj({"targets": array(string(_TARGET), "Recipients"), "message": string("Message text")},
          ("targets", "message")),
      open_world=True)
async def message_broadcast(call: Call, a: dict[str, Any]) -> Any:
    route = _route(call, a["targets"][0])
    del route["to"]
    params = {**route, **_once(), "targets": a["targets"], "message": a["message"]}
    result = await call.gateway("message.broadcast", params)
    # One record per recipient that got it: when the gateway reports per-target results, trust them.
    results = result.get("results") if isinstance(result, dict) else None
    if isinstance(results, list):
        sent = [r.get("to") for r in results if isinstance(r, dict) and r.get("ok", True) and r.get("to")]
    else:
        sent = list(a["targets"])
    for to in sent:
        _record(call, {}, {**route, "to": to}, a["message"])
    return result


@tool("message_react", "React to a message", "React to a message with an emoji (an empty emoji removes the reaction).",
      obj({"emoji": string("The emoji; empty removes the reaction", min_length=0, max_length=32),
           "messageId": string(_MESSAGE_ID)},
          ("emoji", "messageId")),
      idempotent=True, open_world=True)
async def message_react(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("message.react", {**_route(call), "messageId": a["messageId"], "emoji": a["emoji"]})


@tool("message_delete", "Delete a message", "Delete a message in the current conversation.",
      obj({"messageId": string(_MESSAGE_ID)}, ("messageId",)),
      destructive=True, idempotent=True, open_world=True)
async def message_delete(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("message.delete", {**_route(call), "messageId": a["messageId"]})


@tool("message_send_attachment", "Send a file", "Send a file (URL or path) with an optional caption.",
      obj({"target": string(_TARGET), "file": string("File URL or path"), "caption": string("Caption text")},
          ("target", "file")),
      open_world=True)
async def message_send_attachment(call: Call, a: dict[str, Any]) -> Any:
    route = _route(call, a["target"])
    result = await call.gateway("message.sendAttachment",
                                {**route, **_once(), "file": a["file"], **compact(caption=a.get("caption"))})
    _record(call, result, route, a.get("caption"), a["file"])
    return result


@tool("message_send_with_effect", "Send with an effect",
      "Send a message with a visual effect (where the channel has them).",
      obj({"target": string(_TARGET), "message": string("Message text"), "effectId": string("Effect id")},
          ("target", "message", "effectId")),
      open_world=True)
async def message_send_with_effect(call: Call, a: dict[str, Any]) -> Any:
    route = _route(call, a["target"])
    result = await call.gateway("message.sendWithEffect",
                                {**route, **_once(), "message": a["message"], "effectId": a["effectId"]})
    _record(call, result, route, a["message"])
    return result


@tool("message_pin", "Pin a message", "Pin a message in the current conversation.",
      obj({"messageId": string(_MESSAGE_ID)}, ("messageId",)),
      idempotent=True, open_world=True)
async def message_pin(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("message.pin", {**_route(call), "messageId": a["messageId"]})


@tool("message_read", "Read messages", "Read recent messages of a channel (the current conversation by default).",
      obj({"channelId": string("Chat or channel to read (default: the current conversation)"),
           "limit": integer("Most messages to return (default 20)", minimum=1, maximum=200)}),
      read_only=True, open_world=True)
async def message_read(call: Call, a: dict[str, Any]) -> Any:
    route = _route(call, a.get("channelId"), need_to=False)
    return await call.gateway("message.read", {**route, **compact(limit=a.get("limit"))})
