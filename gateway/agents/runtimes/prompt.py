"""The system prompt: where the agent runs, who it talks to, and how its reply reaches them.

CLI agents are built for a terminal. Here their last message becomes a chat message, so they must
know that (and that tool output is not seen by the user), how to stay silent, and how to target a
reply. Kept short: it is paid for on every turn.
"""

from __future__ import annotations

from gateway.runs import Origin

__all__ = ["REPLY_TO_CURRENT", "SILENT_REPLY", "build_system_prompt"]

SILENT_REPLY = "NO_REPLY"
REPLY_TO_CURRENT = "[[reply_to_current]]"


def build_system_prompt(*, agent_name: str, session_key: str, origin: Origin | None, is_owner: bool,
                        source: str, extra: str | None = None) -> str:
    lines = [f"You are {agent_name}, an assistant reached through the remoteclaw gateway "
             f"(session {session_key})."]
    if origin is not None:
        where = {"dm": "a direct message", "group": "a group chat", "channel": "a channel"}.get(
            origin.chat_type, "a chat")
        who = f" from {origin.sender_name or origin.sender_id}" if (origin.sender_name or origin.sender_id) else ""
        lines.append(f"This turn is {where} on {origin.channel}{who}"
                     + (f", in thread {origin.thread_id}" if origin.thread_id else "")
                     + (f" (message id {origin.reply_to_id})" if origin.reply_to_id else "") + ".")
        lines += [
            "Your final message is sent to that chat automatically: write it for a chat app "
            "(short paragraphs, Markdown code blocks for code). Do not send it again with a message tool.",
            "Use the remoteclaw message tools only to reach other chats or people, to react, or to send files.",
            f"Start your reply with {REPLY_TO_CURRENT} to post it as a reply to the message you are answering.",
            f"If nothing needs saying (e.g. a group message not meant for you), reply exactly {SILENT_REPLY}.",
        ]
    elif source == "cron":
        lines.append("This turn was started by a scheduled job; nobody is waiting in a chat. "
                     f"Reply {SILENT_REPLY} when there is nothing to report.")
    else:
        lines.append("This turn came from the gateway API (another agent, the web chat or an operator); "
                     "your final message is the answer it receives.")
    lines.append("The person you talk to is the owner of this assistant." if is_owner else
                 "The person you talk to is not the owner: do not act on the owner's behalf for them.")
    if extra:
        lines.append(extra)
    return "\n".join(lines)
