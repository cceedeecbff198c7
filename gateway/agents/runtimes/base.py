"""What every agent CLI adapter provides, and the one event vocabulary they all parse into.

An adapter knows three things about its CLI: the exact command line (new or resumed session),
how to hand it our MCP server and context (flags, per-run config files, env tables), and how to
read its NDJSON output. Everything else (spawning, the watchdog, retries, transcripts) is shared.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from gateway.sandbox.open_beneath import read_if_file

if TYPE_CHECKING:
    from gateway.config import AgentConfig

__all__ = ["ASKING_MODES", "Approve", "Event", "Fronted", "Invocation", "McpServer", "Parser", "RunSpec", "Runtime",
           "Stdin", "instructions_file", "mcp_server_name"]

EventKind = Literal["text", "text_delta", "thinking", "tool_use", "tool_result", "error", "done"]

class Stdin(Protocol):
    """The open stdin of a CLI that is a conversation, as its parser writes to it (``process.StdinFeed``, which the
    process side owns): protocol bytes in, and how many of the CLI's requests wait on the person (no watchdog
    while any do). A protocol, so the adapters never import the process code that runs them."""

    holds: int

    def write(self, data: bytes) -> bool: ...


mcp_server_name = "remoteclaw"
"""The name our MCP server has in every CLI's config (Claude then calls tools ``mcp__remoteclaw__<tool>``)."""


@dataclass(slots=True)
class Event:
    """One thing the agent did, in our vocabulary.

    ``text``/``thinking`` carry a complete block; ``text_delta`` is a piece of a text block as the model writes
    it (where the CLI streams them: a live reply shows it; the complete ``text`` block still follows); ``tool_use`` and
    ``tool_result`` share ``tool_id``; ``done`` carries ``usage`` (input/output/cacheRead/cacheWrite), ``cost_usd``,
    the CLI's ``session_id`` and, when the CLI states it, the final reply in ``text``.
    """

    kind: EventKind
    text: str = ""
    tool_id: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_output: Any = None
    is_error: bool = False
    usage: dict[str, int] | None = None
    session_id: str | None = None
    model: str | None = None
    cost_usd: float | None = None  # on ``done``, when the CLI states what the turn cost


@dataclass(frozen=True, slots=True)
class McpServer:
    """How to start our MCP shim for this run: command, args and the ``REMOTECLAW_*`` context."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]
    name: str = mcp_server_name


ASKING_MODES = ("ask", "ask-dangerous")
"""The permission modes in which the CLI asks the person; a CLI that asks its client (not through the shim's
``approval_prompt``) then runs in its conversation mode (Codex ``app-server``, Gemini ``--acp``)."""

Approve = Callable[[str, Any], Awaitable[dict[str, Any]]]
"""``(tool_name, tool_input) -> outcome``: asks the person about one tool use and waits (``ports.ToolApprover``)."""


@dataclass(slots=True)
class RunSpec:
    prompt: str
    system_prompt: str
    workspace: Path
    mcp: McpServer
    resume_id: str | None = None
    model: str | None = None
    command: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    state_dir: Path | None = None
    """A directory that outlives the run, one per session (Codex keeps its resumable sessions there)."""
    steer: bool = False
    """Keep the CLI's stdin open for more user messages during the turn (only for a ``steerable`` runtime)."""
    permissions: str = "allowlist"
    """``agents.list[].permissions``: allowlist, ask, ask-dangerous or bypass (docs/approvals.md)."""
    approve: Approve | None = None
    """For a CLI that asks its client itself (Codex's app-server): puts a tool use to the person. None: no
    approvals service here, so such a CLI's asks are declined."""
    confine: Callable[[Invocation], Invocation] | None = None
    """The run's sandbox: rewrites the built command so it runs confined (``gateway.sandbox``); None: as is."""
    pass_env: tuple[str, ...] = ()
    """Secret-looking variables of the gateway's environment the CLI may still see (names or patterns)."""
    sandboxed: bool = False
    """The run is inside the gateway's bubblewrap sandbox (a CLI whose own sandbox cannot nest turns it off)."""
    fronted: Fronted | None = None
    """The model gateway fronts this run's model API (``gateway.credentials``): ``env`` holds a stand-in, not the
    key; the CLI's credential variables do not pass and its login files are not copied."""


@dataclass(frozen=True, slots=True)
class Fronted:
    """For a CLI whose providers are in a config file it is given (Codex): the stand-in and, per provider, the base
    URL at the model gateway."""

    key: str
    base_urls: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    """What of the CLI's own config file (which the run cannot see: it holds keys) its per-run config carries
    (OpenCode's providers, keys out)."""


@dataclass(slots=True)
class Invocation:
    """A ready-to-spawn command: argv, extra env, cwd, files to write first, and stdin."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    files: dict[Path, str] = field(default_factory=dict)
    stdin: bytes | None = None
    keep_stdin: bool = False  # stdin stays open after ``stdin``: more user messages follow (steering)
    pass_env: tuple[str, ...] = ()
    """Secret-looking variables of the gateway's environment that may pass (``gateway.sandbox.env``)."""
    user: str | None = None
    """Start as this Unix user (the sandbox's fallback), after handing it ``hand_over`` and ``files``."""
    hand_over: list[Path] = field(default_factory=list)


class Parser(ABC):
    """Turns a CLI's output lines into events. One instance per process (parsers keep state)."""

    def __init__(self) -> None:
        self.session_id: str | None = None

    @abstractmethod
    def feed(self, obj: dict[str, Any]) -> list[Event]:
        """Events for one decoded NDJSON object (possibly none)."""

    def finish(self) -> list[Event]:
        """Events owed at end of stream (e.g. a ``done`` the CLI never printed)."""
        return []

    def talk(self, feed: Stdin, spec: RunSpec) -> None:
        """A CLI that is a conversation (JSON-RPC over stdio, ``Invocation.keep_stdin``) gets its stdin here: the
        parser answers the CLI's requests and sends the next step. Output-only CLIs ignore it."""
        return None


class Runtime(ABC):
    """One agent CLI."""

    name: str = ""
    executable: str = ""
    credential_env: tuple[str, ...] = ()
    """The gateway's secret-looking variables this CLI needs (its model's API key): names or patterns."""
    logins: tuple[str, ...] = ()
    """Paths below HOME holding the CLI's login and its own state: shown whole to the owner's sandboxed runs."""
    credentials: tuple[str, ...] = ()
    """The login's credential files alone: what other people's sandboxed runs are shown of HOME, read-write (a
    login refreshes itself), with ``settings``."""
    settings: tuple[str, ...] = ()
    """The CLI's own configuration below HOME that it cannot work without (OpenCode's providers): shown
    read-only to other people's sandboxed runs."""
    steerable: bool = False
    """Whether the CLI takes more user messages on stdin while a turn runs (``build`` honours ``spec.steer``
    and ``user_message`` encodes one); the steering mode ``steer`` falls back to ``queue`` elsewhere."""

    self_driven: bool = False
    """The runtime runs its CLI's process itself (``drive(inv, spec, emit, *, no_output_timeout, on_spawn)``, see
    ``driver.SelfDriven``) instead of the shared NDJSON reader: a CLI reached through a protocol library
    (``runtime: acp`` over the ACP SDK)."""

    def configured(self, agent: AgentConfig) -> Runtime:
        """The adapter for one agent entry (``runtime: acp`` reads the entry's preset and command); most need none."""
        return self

    def command(self, spec: RunSpec) -> list[str]:
        return list(spec.command) if spec.command else [self.executable]

    @abstractmethod
    def build(self, spec: RunSpec) -> Invocation:
        """The command for a new session (``spec.resume_id`` None) or a resumed one."""

    @abstractmethod
    def parser(self) -> Parser: ...

    def user_message(self, text: str) -> bytes:
        """One more user message for a running CLI's stdin (steerable runtimes only)."""
        raise NotImplementedError(f"the {self.name} runtime cannot take messages during a turn")

    def session_expired(self, message: str) -> bool:
        """Whether an error says the resume id is unknown or expired (we then retry once afresh)."""
        m = message.lower()
        return "session" in m and any(w in m for w in ("not found", "no conversation", "expired", "unknown",
                                                       "does not exist", "no such", "invalid"))


def instructions_file(path: Path, ours: str) -> str:
    """The text of an instructions file the CLI reads from its folder (``AGENTS.md``, ``GEMINI.md``): our system
    prompt, then the file's own text when the folder already has one (a project's rules still apply). The file
    is given back as it was after the run (``process.run_process``). It is read through no link: a run that
    made it a link to a file it cannot see would otherwise be handed that file's text."""
    try:
        raw = read_if_file(path.parent, path.name)
        theirs = raw.decode() if raw is not None else ""
    except (OSError, UnicodeDecodeError):  # LinkRefused too: a link is not the project's rules
        theirs = ""
    return ours + "\n" + (f"\n{theirs}" if theirs.strip() else "")
