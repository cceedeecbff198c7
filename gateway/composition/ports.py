"""What the core needs of a capability, as protocols the core defines and the capability implements.

The agent executor speaks replies and hears voice notes when the voice capability runs, lets the approvals
capability read a chat's ``/approve`` or answer before a message reaches the agent, tells it when a run ended,
asks it about a tool use for a CLI that asks its client (Codex's app-server), and writes the plugins' tools
into each run's shim config; the config, pairing and device methods write what they changed to the audit log
(``AUDIT``, through ``CallContext.audit``). Each is looked up with its key
(``gateway.composition.services``) and may be absent: the core then does without (no voice, no approvals, no plugin
tools), and never imports the capability's package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from gateway.composition.services import Key

if TYPE_CHECKING:
    from gateway.dispatch.callers import Caller

__all__ = ["AGENT_HOSTS", "AUDIT", "CHAT_DECISIONS", "DECISION_REFUSED", "DESKTOP_TOOLS", "MODEL_GATEWAY",
           "PLUGIN_TOOLS", "RECORDER", "RUN_WATCHERS", "TOOL_APPROVALS", "VOICE", "Auditor", "ChatDecisions",
           "ChatRecorder", "Clip", "DesktopTools", "Heard", "PluginTools", "RunWatcher", "ToolApprover", "Voice"]


class Clip(Protocol):
    """A spoken reply on the gateway's disk."""

    @property
    def path(self) -> str: ...
    @property
    def mime(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def duration_s(self) -> float: ...


class Heard(Protocol):
    """A transcript."""

    @property
    def text(self) -> str: ...


class Voice(Protocol):
    async def auto_reply(self, reply: str, *, inbound_voice: bool) -> tuple[str, bool]:
        """The reply's text to send and whether it is also to be spoken (auto-TTS)."""
        ...

    async def speak_for(self, text: str, channel: str | None = None, *, session_key: str | None = None) -> Clip:
        """``text`` as audio in the format ``channel`` plays (a voice note when None or unknown), kept among
        ``session_key``'s outbound files."""
        ...

    async def hear(self, path: str) -> tuple[str, str | None]:
        """A voice message for the prompt: ``(note, error)``."""
        ...

    async def listen(self, path: str) -> tuple[Heard | None, str | None]:
        """The transcript of an audio file, or None and why not; ``(None, None)`` when speech to text is off."""
        ...

    async def providers(self) -> dict[str, Any]:
        """The speech providers and the active one (``talk.catalog``)."""
        ...


class ChatDecisions(Protocol):
    def awaits_answer(self, key: str, *, is_owner: bool, chat_type: str) -> bool:
        """Whether what this sender says in this session now would answer a pending question."""
        ...

    async def handle(self, key: str, text: str, *, sender: str, channel: str, is_owner: bool,
                     chat_type: str) -> str | None:
        """The answer to tell the chat when ``text`` decided a pending request; None when it was no decision."""
        ...

    async def approve(self, key: str, rest: str, *, sender: str, channel: str, is_owner: bool,
                      chat_type: str) -> str:
        """``/approve <rest>`` typed in session ``key``: "" when it decided, else what to tell the chat."""
        ...


class RunWatcher(Protocol):
    async def run_ended(self, session_key: str) -> int:
        """The run of ``session_key`` ended (its pending requests are cancelled); how many were."""
        ...


class ToolApprover(Protocol):
    async def ask_and_wait(self, agent_id: str, session_key: str, tool_name: str, tool_input: Any) -> dict[str, Any]:
        """Ask the person whether the run may use a tool and wait for the outcome (a stored "allow always" rule
        answers at once; nobody deciding in time is a deny): ``{status, decision, reason?, resolvedBy?}``."""
        ...


class PluginTools(Protocol):
    def tool_listing(self, agent_id: str | None = None) -> dict[str, Any]:
        """The plugin tools a run's shim offers, and whether it waits for ``before_tool_call``."""
        ...

    def extend_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The config JSON Schema with each plugin's settings schema under its entry."""
        ...


class DesktopTools(Protocol):
    async def tool_listing(self, *, is_owner: bool = True) -> list[dict[str, Any]]:
        """The desktop nodes' tools a run's shim offers (``desktop_*``, each with Cua Driver's schema)."""
        ...


class ChatRecorder(Protocol):
    async def chat_command(self, session_key: str, rest: str, *, is_owner: bool) -> tuple[str, str | None]:
        """``/record start|stop|list``: the answer for the chat, and a file to send with it (the zip) or None."""
        ...


class Auditor(Protocol):
    async def record(self, who: Caller | str, action: str, target: str | None = None,
                     details: Mapping[str, Any] | None = None) -> None:
        """Write that ``who`` (a caller, or an actor such as ``person:<id>``) did ``action`` (dotted:
        ``config.patch``, ``pairing.approve``) to ``target``. Secrets in ``details`` are redacted; a failure to
        write is logged, never raised: the action it records has already happened."""
        ...


VOICE: Key[Voice] = Key("voice")
CHAT_DECISIONS: Key[ChatDecisions] = Key("approvals in the chat")
DECISION_REFUSED = "⛔ Only the session's owner may decide this."
"""What ``ChatDecisions.handle`` answers a command deciding what is not the caller's: a door that is not a chat
(``chat.send``) answers it as a refusal, never as a decision."""
RUN_WATCHERS: Key[RunWatcher] = Key("approvals")
TOOL_APPROVALS: Key[ToolApprover] = Key("approvals")
"""For a runtime that is asked by its CLI itself (Codex's app-server), not through the shim's ``approval_prompt``."""
PLUGIN_TOOLS: Key[PluginTools] = Key("plugins")
DESKTOP_TOOLS: Key[DesktopTools] = Key("desktop tools")
RECORDER: Key[ChatRecorder] = Key("desktop recorder")
MODEL_GATEWAY: Key[Any] = Key("model gateway")
AGENT_HOSTS: Key[Any] = Key("agent hosts")
"""Agent turns on nodes (``gateway.agent_hosts.service.AgentHosts``): placement, output streams, kept messages."""
"""The model gateway (``gateway.credentials.service.ModelGateway``): a run's stand-in credential and base URLs."""
AUDIT: Key[Auditor] = Key("audit log")
"""Every package records through this key (``ctx.audit(...)`` in a handler); absent, recording does nothing."""
