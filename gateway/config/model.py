"""The gateway's configuration: a pydantic model, its file, and safe changes to it.

The file is ``<state dir>/remoteclaw.json`` (JSON5 accepted, ``REMOTECLAW_CONFIG_PATH``
overrides). Environment variables ``REMOTECLAW_<SECTION>__<FIELD>`` override the
file (pydantic-settings). Every change is validated before anything is written,
guarded by the hash of what the caller last read, written atomically, and the
previous file is kept as ``remoteclaw.json.bak``.
"""

from __future__ import annotations

import asyncio
import builtins
import collections.abc
import contextvars
import copy
import functools
import hashlib
import os
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import json5
import orjson
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from gateway.a2a.config import A2aConfig
from gateway.approvals.config import ApprovalsConfig
from gateway.audit.config import AuditConfig
from gateway.config.acp import ACP_AGENTS, AcpAgentCommand
from gateway.config.channels import ChannelAccessConfig, ChannelsConfig
from gateway.config.sections import OpenSection, Section, secret
from gateway.credentials.config import ModelGatewayConfig
from gateway.cron.config import CronConfig, HeartbeatConfig
from gateway.devices.config import NodesConfig
from gateway.mcp_http.config import McpHttpConfig
from gateway.openai_api.config import ApiConfig
from gateway.people.config import PeopleConfig
from gateway.plugin_host.config import PluginsConfig
from gateway.protocol import InvalidRequest, describe_validation_error
from gateway.redaction import REDACTED, redact, restore_redacted, secret_values
from gateway.sandbox.config import SandboxConfig, SandboxOverride
from gateway.voice.config import SttConfig, TtsConfig

__all__ = [
    "REDACTED",
    "AgentConfig",
    "ChannelAccessConfig",
    "Config",
    "ConfigError",
    "ConfigStore",
    "ProjectConfig",
    "env_overrides",
    "hash_data",
    "load_json5",
    "merge_patch",
    "redact",
    "secret_paths",
    "secret_values",
    "validate",
]



class RateLimitConfig(Section):
    maxFailures: int = Field(5, ge=1, description="Failed auth attempts per address before slowing down.")
    windowMs: int = Field(60_000, ge=1000)
    lockoutMs: int = Field(30_000, ge=0, description="How long a locked-out address waits.")


class AuthConfig(Section):
    token: str | None = secret("Gateway token; generated into the state dir when unset.")
    rateLimit: RateLimitConfig = RateLimitConfig()
    autoApproveLoopbackDevices: bool = Field(
        True, description="Approve new devices connecting from 127.0.0.1/::1 without asking the owner."
    )


class RequestRateConfig(Section):
    """Every connection's request rate, a token bucket over all of its methods (docs/configuration.md)."""

    perSecond: float = Field(1000, ge=0, description="Requests per second one connection may keep up (0: no "
                             "limit). Past it, a request is answered UNAVAILABLE with details.code RATE_LIMITED "
                             "and retryAfterMs, without running.")
    burst: int = Field(2000, ge=1, description="Requests one connection may send at once after a quiet while.")


class ControlUiConfig(Section):
    """OpenClaw's Control UI, served by the gateway when its files are installed (see docs/control-ui.md)."""

    enabled: bool = Field(True, description="Serve the Control UI when its files are found.")
    root: str | None = Field(None, description="Its folder (the openclaw package's dist/control-ui); unset: "
                             ".cache/openclaw/cli/node_modules/openclaw/dist/control-ui in the project.")
    basePath: str = Field("/openclaw", pattern=r"^/[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$",
                          description="Where it is served on the gateway's own origin (its socket is there too).")


class GatewayConfig(Section):
    port: int = Field(18789, ge=0, le=65535)
    bind: str = "127.0.0.1"
    auth: AuthConfig = AuthConfig()
    handshakeTimeoutMs: int = Field(10_000, ge=100)
    helloPresenceLimit: int = Field(100, ge=0, le=100_000, description="How many presence entries a watcher's "
                                    "hello-ok lists (the latest; one more entry says how many in all). "
                                    "system-presence {offset, limit} pages through everyone.")
    tickIntervalMs: int = Field(30_000, ge=100)
    maxPayload: int = Field(25 * 1024 * 1024, ge=64 * 1024)
    maxBufferedBytes: int = Field(8 * 1024 * 1024, ge=64 * 1024)
    maxBufferedBytesTotal: int = Field(
        128 * 1024 * 1024, ge=1024 * 1024,
        description="Bytes queued for all clients together: past half of it skippable events are dropped, "
                    "past all of it the slowest clients are closed (1008 slow consumer).")
    publicUrl: str | None = Field(None, description="URL printed for clients, when behind a proxy.")
    redisUrl: str | None = Field(None, description="Redis for events between replicas (REMOTECLAW_REDIS_URL wins).")
    mcp: McpHttpConfig = McpHttpConfig()
    controlUi: ControlUiConfig = ControlUiConfig()
    shutdownGraceSeconds: float = Field(5, ge=0, description="On stop or restart, how long running turns may "
                                        "finish before they are cut (and recovered at the next start).")
    requestRate: RequestRateConfig = RequestRateConfig()
    maxUnauthenticated: int = Field(256, ge=1, description="Sockets that may be in their handshake at once.")
    maxUnauthenticatedPerAddress: int = Field(64, ge=1, description="The same, from one address.")
    allowedOrigins: list[str] = Field(
        default_factory=list,
        description="Browser origins (scheme://host[:port]) allowed besides the gateway's own, e.g. a proxy's "
                    "public URL. A request from any other page is refused; clients that send no Origin "
                    "(CLIs, agents, nodes) are not affected.")


SteeringMode = Literal["queue", "interrupt", "steer"]
"""Our three ways to handle a message that arrives during a turn (``gateway.runs.steering``)."""


_ON_NODE: contextvars.ContextVar[bool] = contextvars.ContextVar("_ON_NODE", default=False)
"""While an agent with ``node`` is validated: its projects' paths are the node's, not checked here."""


class ProjectConfig(Section):
    """A folder an agent may work in; a conversation picks one with ``/project <name>``."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    path: str = Field(min_length=1, description="An existing directory (``~`` expanded); for an agent on a node, "
                      "an absolute folder on that node, inside one it lends.")
    worktrees: bool = Field(False, description="In a git repository: give each conversation its own git worktree "
                                               "on a branch remoteclaw/<session>, so two conversations never "
                                               "edit the same checkout.")
    people: builtins.list[str] | None = Field(None, description="Who may work in this project besides the owner: "
                                              "person ids, or roles as 'role:member' (gateway.people); unset: the "
                                              "owner only once people are on record (everyone before).")

    @field_validator("path")
    @classmethod
    def _existing_directory(cls, value: str) -> str:
        if _ON_NODE.get():  # the node's folder: it checks it against what it lends (nodes.agents.workdirs)
            if not value.startswith("/") or ".." in Path(value).parts:
                raise ValueError(f"must be an absolute path on the agent's node, got {value!r}")
            return value
        path = Path(value).expanduser()
        if not path.is_absolute():
            raise ValueError(f"must be an absolute path, got {value!r}")
        if not path.is_dir():
            raise ValueError(f"{value!r} is not an existing directory")
        return str(path.resolve())



class AgentConfig(Section):
    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    runtime: str = Field("claude", description="The agent CLI adapter: claude, codex, gemini, opencode, or one a "
                         "plugin adds (the remoteclaw.runtimes extension point).")
    name: str | None = None
    model: str | None = None
    command: list[str] | None = Field(None, description="Override the CLI executable and leading args.")
    toolProfile: Literal["minimal", "messaging", "coding", "full"] = "full"
    env: dict[str, str] = Field(default_factory=dict)
    heartbeat: HeartbeatConfig | None = Field(None, description="A periodic turn in the agent's main session.")
    steering: SteeringMode | None = Field(None, description="What a message that arrives while this agent works "
                                          "does: queue (the next turn), interrupt (stop and restart with it), "
                                          "steer (into the running turn where the runtime allows); unset: "
                                          "messages.queue.mode.")
    maxCostPerDay: float | None = Field(None, gt=0, description="US dollars this agent may spend per UTC day, "
                                        "as its CLI reports cost; once reached, new turns are refused until "
                                        "midnight UTC.")
    people: builtins.list[str] | None = Field(None, description="Who may talk to this agent: person ids, or roles "
                                              "as 'role:member' (gateway.people); unset: everyone. The owner "
                                              "always may.")
    projects: builtins.list[ProjectConfig] = Field(
        default_factory=list, description="Folders this agent can work in; /project lists and switches them "
                                          "(without any, every turn runs in a fresh private folder).")

    @field_validator("projects")
    @classmethod
    def _unique_project_names(cls, value: builtins.list[ProjectConfig]) -> builtins.list[ProjectConfig]:
        names = [p.name for p in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate project names: {', '.join(dupes)}")
        return value

    def project(self, name: str | None) -> ProjectConfig | None:
        """The project called ``name`` (None when unset or no longer configured)."""
        return next((p for p in self.projects if p.name == name), None) if name else None
    node: str | None = Field(None, min_length=1, description="Run this agent's turns on a paired node that "
                             "lends its CLI (its name or id; docs/nodes.md#agent-hosts): the workspace is a folder "
                             "there.")
    workspace: str | None = Field(None, description="With node: the folder on the node the turns work in (one the "
                                  "node lends); unset: a private folder per session on the node.")
    nodeFallback: str | None = Field(None, min_length=1, description="With node: another agent (its id) that "
                                     "takes a message while the node is away, instead of keeping it for the node's "
                                     "return (docs/nodes.md#when-the-node-is-away).")
    permissions: Literal["allowlist", "ask", "ask-dangerous", "bypass"] = Field(
        "allowlist", description="What the agent may do without asking: allowlist (its allowed tools, the rest is "
        "refused), ask (anything else asks the session's owner), ask-dangerous (reads run, writes and commands "
        "ask), bypass (everything runs). Asking needs a runtime that supports it (docs/approvals.md).")
    sandbox: SandboxOverride | None = Field(None, description="This agent's changes to agents.defaults.sandbox "
                                            "(docs/sandbox.md).")
    credentialsMode: Literal["fronted", "shared"] = Field(
        "fronted", description="fronted: runs hold a stand-in and the gateway adds the real credential "
        "(docs/credentials.md); shared: where the CLI or its login cannot be fronted, other people's runs may "
        "still use it, holding the owner's credential.")
    agent: str | None = Field(None, description="runtime acp: a known ACP agent (claude-acp, codex-acp, gemini, "
                              "opencode; docs/acp.md).")
    acp: AcpAgentCommand | None = Field(None, description="runtime acp: the agent's command, args and env (with "
                                        "agent set, they override the preset's).")

    @model_validator(mode="wrap")
    @classmethod
    def _projects_on_node(cls, data: Any, handler: Any) -> Any:
        """An agent on a node has its projects' folders there: ``ProjectConfig`` only checks they are absolute."""
        reset = _ON_NODE.set(isinstance(data, dict) and data.get("node") is not None)
        try:
            return handler(data)
        finally:
            _ON_NODE.reset(reset)

    @model_validator(mode="after")
    def _node_placement(self) -> AgentConfig:
        if self.workspace is not None:
            if self.node is None:
                raise ValueError("workspace is a folder on the agent's node: set node too")
            if not self.workspace.startswith("/"):
                raise ValueError(f"workspace must be an absolute path on the node, got {self.workspace!r}")
        if self.nodeFallback is not None and self.node is None:
            raise ValueError("nodeFallback takes the agent's turns while its node is away: set node too")
        if self.nodeFallback == self.id:
            raise ValueError("nodeFallback names another agent, not the agent itself")
        if self.node is not None and self.projects and self.workspace is not None:
            raise ValueError("an agent on a node works in its workspace or in its projects (folders on the node), "
                             "not both")
        return self

    @model_validator(mode="after")
    def _acp_is_configured(self) -> AgentConfig:
        if self.runtime != "acp":
            if self.agent is not None or self.acp is not None:
                raise ValueError("agent and acp are settings of runtime acp")
            return self
        if self.agent is not None and self.agent not in ACP_AGENTS:
            raise ValueError(f"unknown ACP agent {self.agent!r}; known: {', '.join(ACP_AGENTS)} (or give acp.command)")
        if self.agent is None and not (self.acp and self.acp.command) and not self.command:
            raise ValueError("runtime acp needs agent (a preset: claude-acp, codex-acp, gemini, opencode) or "
                             "acp.command")
        return self

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, value: str) -> str:
        from gateway.composition.entry_points import RUNTIMES

        if value not in RUNTIMES:
            raise ValueError(RUNTIMES.unknown(value))
        return value


class AgentDefaults(Section):
    """What every agent has unless its own entry says otherwise."""

    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="How agent runs are confined: "
                                   "the gateway's state, process and secrets out of their sight (docs/sandbox.md).")


class AgentsConfig(Section):
    default: str = "main"
    defaults: AgentDefaults = Field(default_factory=AgentDefaults)
    list: builtins.list[AgentConfig] = Field(default_factory=lambda: [AgentConfig(id="main")])
    maxConcurrentRuns: int = Field(4, ge=1)
    timeoutSeconds: int = Field(600, ge=1)
    noOutputTimeoutSeconds: int = Field(180, ge=1)
    retryInterrupted: bool = Field(True, description="After a crash, start an interrupted turn once more when "
                                   "it had not sent anything yet.")

    @model_validator(mode="after")
    def _ids_make_sense(self) -> AgentsConfig:
        ids = [a.id for a in self.list]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"agents.list has duplicate ids: {', '.join(dupes)}")
        if ids and self.default not in ids:
            raise ValueError(f"agents.default '{self.default}' is not an id in agents.list ({', '.join(ids)})")
        for agent in self.list:
            if agent.nodeFallback is not None and agent.nodeFallback not in ids:
                raise ValueError(f"agents.list {agent.id}: nodeFallback '{agent.nodeFallback}' is not an id in "
                                 f"agents.list ({', '.join(ids)})")
        return self

    def sandbox_for(self, agent: AgentConfig) -> SandboxConfig:
        """The sandbox settings of ``agent``: the default, with the agent's own changes."""
        base = self.defaults.sandbox
        return agent.sandbox.over(base) if agent.sandbox is not None else base


class SessionConfig(OpenSection):
    dmScope: Literal["main", "per-peer", "per-channel-peer", "per-account-channel-peer"] = "main"
    idleMinutes: float = Field(0, ge=0, description="After this long without a turn, the next message starts a "
                                                    "fresh agent conversation (0: conversations never expire).")


class QueueConfig(OpenSection):
    """OpenClaw's ``messages.queue``: its mode names are accepted and mapped onto ours (collect and followup
    queue, steer-backlog steers)."""

    mode: Literal["queue", "interrupt", "steer", "collect", "followup", "steer-backlog"] = Field(
        "queue", description="Default steering mode for agents without agents.list[].steering.")


class MessagesConfig(OpenSection):
    queue: QueueConfig = QueueConfig()
    tts: TtsConfig = TtsConfig()
    stt: SttConfig = SttConfig()
    progress: bool = Field(True, description="While an agent works on a Telegram or Discord message, keep one "
                                             "message updated with its current step; deleted when the reply comes.")
    commands: bool = Field(True, description="Answer /stop, /new, /status and /help typed in Telegram or Discord "
                                             "in the gateway instead of passing them to the agent.")


class ToolsConfig(OpenSection):
    profile: Literal["minimal", "messaging", "coding", "full"] = "full"


class LoggingConfig(Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    consoleLevel: Literal["debug", "info", "warning", "error"] = "info"
    maxFileBytes: int = Field(10 * 1024 * 1024, ge=64 * 1024)
    keepFiles: int = Field(5, ge=1)
    loopStallMs: int = Field(500, ge=0)
    """Log a ``loop.stalled`` warning, with where, when the event loop is held longer than this (0: off)."""


class Config(BaseSettings):
    """The whole configuration. Unknown keys are refused so typos surface at once."""

    model_config = SettingsConfigDict(
        extra="forbid",
        env_prefix="REMOTECLAW_",
        env_nested_delimiter="__",
        populate_by_name=True,
    )

    gateway: GatewayConfig = GatewayConfig()
    agents: AgentsConfig = AgentsConfig()
    channels: ChannelsConfig = ChannelsConfig()
    session: SessionConfig = SessionConfig()
    messages: MessagesConfig = MessagesConfig()
    cron: CronConfig = CronConfig()
    approvals: ApprovalsConfig = ApprovalsConfig()
    people: PeopleConfig = PeopleConfig()
    audit: AuditConfig = AuditConfig()
    nodes: NodesConfig = NodesConfig()
    plugins: PluginsConfig = PluginsConfig()
    tools: ToolsConfig = ToolsConfig()
    logging: LoggingConfig = LoggingConfig()
    modelGateway: ModelGatewayConfig = ModelGatewayConfig()
    api: ApiConfig = ApiConfig()
    a2a: A2aConfig = A2aConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment wins over the file: an operator's override must not be undone by a patch.
        return (_SectionEnvSource(settings_cls), init_settings)


_SECTIONS = tuple(Config.model_fields)


class _SectionEnvSource(EnvSettingsSource):
    """Environment overrides in the nested form only (``REMOTECLAW_<SECTION>__<FIELD>``).

    A bare ``REMOTECLAW_<SECTION>`` is ignored: names like ``REMOTECLAW_SESSION`` or ``REMOTECLAW_TOOLS``
    are easily set for other reasons (agent runs get ``REMOTECLAW_*`` context), and must not break loading.
    """

    def _load_env_vars(self) -> Mapping[str, str | None]:
        bare = {f"remoteclaw_{name}" for name in _SECTIONS}
        return {k: v for k, v in super()._load_env_vars().items() if k.lower() not in bare}


def env_overrides() -> list[str]:
    """Dotted config keys set by ``REMOTECLAW_<SECTION>__<FIELD>`` variables, for ``config.get``."""
    out = []
    for name in os.environ:
        upper = name.upper()
        if not upper.startswith("REMOTECLAW_") or "__" not in upper:
            continue
        section, _, rest = upper[len("REMOTECLAW_"):].partition("__")
        if section.lower() in _SECTIONS and rest:
            fields = {f.lower(): f for f in _field_names(section.lower())}
            parts = rest.split("__")
            parts[0] = fields.get(parts[0].lower(), parts[0].lower())
            out.append(".".join([section.lower(), *parts]))
    return sorted(out)


def _field_names(section: str) -> list[str]:
    annotation = Config.model_fields[section].annotation
    return list(getattr(annotation, "model_fields", {}))


class ConfigError(InvalidRequest):
    """A config change or file that does not validate; ``details.errors`` lists every problem."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def hash_data(data: dict[str, Any]) -> str:
    """A stable hash of config data (key order does not matter); clients echo it back as ``baseHash``."""
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _env_name(loc: tuple[Any, ...]) -> str | None:
    """The environment variable that set the value at ``loc``, if one did."""
    keys = [str(p) for p in loc if not isinstance(p, int)]
    for n in range(len(keys), 1, -1):
        name = "REMOTECLAW_" + "__".join(keys[:n]).upper()
        if any(k.upper() == name for k in os.environ):
            return name
    return None


def validate(data: dict[str, Any]) -> Config:
    """Validate raw config data (with env overrides applied); raises ``ConfigError`` naming each field."""
    if not isinstance(data, dict):
        raise ConfigError("invalid config: at root: must be object")
    try:
        config = Config(**data)
    except ValidationError as exc:
        errors = []
        for e in exc.errors(include_url=False):
            loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            entry = {"path": "/" + "/".join(str(p) for p in loc), "message": e["msg"]}
            env = _env_name(loc)
            if env:
                entry["env"] = env
            errors.append(entry)
        summary = describe_validation_error(exc)
        envs = sorted({e["env"] for e in errors if "env" in e})
        if envs:
            summary += f" (set by {', '.join(envs)})"
        raise ConfigError(f"invalid config: {summary}", details={"errors": errors}) from None
    except SettingsError as exc:
        # A REMOTECLAW_<SECTION>__<FIELD> variable whose value is not the JSON the field needs.
        m = re.search(r'field "(\w+)"', str(exc))
        section = m.group(1) if m else None
        where = f"a REMOTECLAW_{section.upper()}__* variable" if section else "a REMOTECLAW_* variable"
        raise ConfigError(f"invalid config from the environment: {where} is not valid JSON for its field",
                          details={"errors": [{"path": f"/{section or ''}", "message": str(exc)}]}) from None
    problems = [problem for check in list(extra_checks) for problem in check(config)]
    if problems:
        first = problems[0]
        raise ConfigError(f"invalid config: at {first['path']}: {first['message']}", details={"errors": problems})
    return config


@functools.cache
def _schema_secret_paths() -> frozenset[tuple[str, ...]]:
    """What ``schema_secret_paths(Config.model_json_schema())`` finds, read from the models' fields instead: the
    same paths (a test compares them) without building the JSON Schema, about 40 ms of every start."""
    return frozenset(_model_secret_paths(Config, (), 0))


def _model_secret_paths(model: type[BaseModel], path: tuple[str, ...], depth: int) -> Iterator[tuple[str, ...]]:
    if depth > 12:
        return
    for name, field in model.model_fields.items():
        where = (*path, field.alias or name)
        extra = field.json_schema_extra
        if isinstance(extra, dict) and extra.get("secret") is True:
            yield where
        yield from _type_secret_paths(field.annotation, where, depth + 1)


def _type_secret_paths(annotation: Any, path: tuple[str, ...], depth: int) -> Iterator[tuple[str, ...]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from _model_secret_paths(annotation, path, depth)
        return
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (dict, collections.abc.Mapping) and len(args) == 2:
        yield from _type_secret_paths(args[1], (*path, "*"), depth + 1)
    elif origin in (list, tuple, set, frozenset, collections.abc.Sequence):
        for arg in args:
            if arg is not Ellipsis:
                yield from _type_secret_paths(arg, (*path, "*"), depth + 1)
    else:  # a union, Annotated, Optional: each member at the same path
        for arg in args:
            yield from _type_secret_paths(arg, path, depth + 1)


extra_secret_paths: set[tuple[str, ...]] = set()
"""Secret paths of schemas that are not part of ``Config`` itself (the plugins' config schemas)."""

ConfigCheck = Callable[[Config], list[dict[str, str]]]
extra_checks: list[ConfigCheck] = []
"""Further checks of a validated config, each returning ``[{path, message}]`` (the loaded plugins' settings
against their schemas); ``validate`` refuses a config any of them objects to."""


def secret_paths() -> frozenset[tuple[str, ...]]:
    """Where the config schema (and the loaded plugins' schemas) mark secrets."""
    base = _schema_secret_paths()
    return base | frozenset(extra_secret_paths) if extra_secret_paths else base


def load_json5(text: str) -> Any:
    """JSON5 as Python values, every string valid Unicode.

    The json5 library leaves a ``\\ud800\\udc00`` escape as two surrogate code points instead of the one
    character they spell, and keeps a lone one; either would fail much later, when the config is written out as
    UTF-8. Pairs are joined here and a lone surrogate is refused as invalid JSON5 (``ValueError``).
    """
    return _whole_characters(json5.loads(text))


def _whole_characters(value: Any) -> Any:
    if isinstance(value, str):
        if not any("\ud800" <= ch <= "\udfff" for ch in value):
            return value
        try:
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError:
            raise ValueError(f"a lone surrogate escape in {value.encode('unicode_escape').decode()[:80]!r}") from None
    if isinstance(value, dict):
        return {_whole_characters(k): _whole_characters(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_characters(v) for v in value]
    return value


class ConfigStore:
    """The config file on disk and the validated config in memory, changed only together.

    ``data`` is what the file holds (no env overrides), ``config`` the validated effective config,
    ``hash`` the hash of ``data``. Only validated data is ever adopted, so the store always holds
    the last good config, whatever happens to the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {}
        self.config: Config = Config.model_construct()  # a placeholder until load(); reads no env
        self.hash = hash_data({})
        # Why the file on disk is not what runs (set when a hand edit was refused), else None.
        self.file_issue: dict[str, Any] | None = None
        # Serializes check-hash/validate/write so two writers cannot both pass the same baseHash.
        self.lock = asyncio.Lock()

    @property
    def backup_path(self) -> Path:
        return self.path.with_name(self.path.name + ".bak")

    def parse(self, text: str) -> dict[str, Any]:
        """Parse file text (JSON5); raises ``ConfigError`` saying where it is broken.

        An empty (or whitespace-only) file is refused, not taken as "all defaults": it is what an editor's
        truncated save or a failed copy leaves, and adopting it would reset the agents, the channels and
        the token of a running gateway. ``{}`` asks for the defaults explicitly.
        """
        if not text.strip():
            raise ConfigError(f"invalid config file {self.path}: the file is empty (write {{}} for all defaults, "
                              "or delete the file)", details={"errors": [{"path": "/", "message": "empty file"}]})
        try:
            data = load_json5(text)
        except ValueError as exc:
            msg = " ".join(str(exc).split())
            raise ConfigError(f"invalid config file {self.path}: not valid JSON5: {msg}",
                              details={"errors": [{"path": "/", "message": msg}]}) from None
        if not isinstance(data, dict):
            raise ConfigError(f"invalid config file {self.path}: the top level must be an object",
                              details={"errors": [{"path": "/", "message": "must be object"}]})
        return data

    def read_file(self) -> dict[str, Any]:
        """Parse the file (JSON5); a missing file is an empty config."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {self.path}: {exc}") from None
        return self.parse(text)

    def load(self) -> Config:
        """Read and validate the file, then make it current. Raises ``ConfigError``; on error nothing changes."""
        data = self.read_file()
        config = validate(data)
        self.adopt(data, config)
        return config

    def adopt(self, data: dict[str, Any], config: Config) -> None:
        """Make already validated ``data`` current in memory (the file is not touched)."""
        self.data, self.config, self.hash = data, config, hash_data(data)
        self.file_issue = None

    def check_base_hash(self, base_hash: str | None) -> None:
        if base_hash is not None and base_hash != self.hash:
            raise InvalidRequest(
                "config changed since it was read (baseHash mismatch): call config.get and retry",
                details={"code": "CONFIG_HASH_MISMATCH", "currentHash": self.hash},
            )

    def prepare_patch(self, patch: dict[str, Any]) -> tuple[dict[str, Any], Config]:
        merged = merge_patch(self.data, restore_redacted(patch, self.data))
        return merged, validate(merged)

    def prepare_replace(self, data: dict[str, Any]) -> tuple[dict[str, Any], Config]:
        data = restore_redacted(data, self.data)
        return data, validate(data)

    def commit(self, data: dict[str, Any], config: Config) -> None:
        """Write ``data`` atomically and make it current; the previous file is kept as ``.bak``.

        The new file is written to a temp file, fsynced and renamed over the old one, so readers
        (the file watcher, an editor) see either the old or the new file, never a missing or
        partial one. The backup is written the same way before the switch. Blocking: call it
        from a thread.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        try:
            previous = self.path.read_bytes()
        except FileNotFoundError:
            previous = None
        if previous is not None:
            _write_atomic(self.backup_path, previous)
        _write_atomic(self.path, body)
        self.adopt(data, config)

    def redacted(self) -> dict[str, Any]:
        """The effective config (file plus env overrides) with secrets hidden."""
        return redact(self.config.model_dump(mode="json"), secret_paths())


def _write_atomic(path: Path, body: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # 0600: the file may hold tokens and API keys.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
