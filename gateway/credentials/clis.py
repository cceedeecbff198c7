"""How each agent CLI is fronted: where its model API is, which credential the gateway holds for it, and what the
run is given instead (a base URL pointing at the gateway and a stand-in where the key was).

One ``Plan`` per agent, read from what the CLI itself would read: the agent's ``env`` over the gateway's
environment, and the login files below the agent's HOME. A plan whose CLI or login cannot be fronted says why
(``unfronted``): ``doctor`` shows it, and the agent is then the owner's alone unless ``credentialsMode: shared``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["STANDIN", "Credential", "Plan", "Upstream", "base_of", "plan_for"]

STANDIN = "{standin}"
"""In ``Plan.run_env``: the run's stand-in credential."""


def base_of(name: str) -> str:
    """In ``Plan.run_env``: the base URL the run is given for upstream ``name``."""
    return "{base:" + name + "}"


Wire = Literal["anthropic", "openai", "gemini"]


@dataclass(frozen=True, slots=True)
class Credential:
    """The real credential, as the gateway adds it upstream. ``login``: a subscription login's file, read (and
    refreshed, ``oauth``) at each use instead of ``value``."""

    how: Literal["x-api-key", "bearer", "x-goog-api-key", "none"]
    value: str | None = None
    login: Path | None = None
    login_kind: Literal["claude", "google", "codex"] = "claude"
    source: str = ""
    """Where it was found (``doctor``): a variable's name, or the login file."""


@dataclass(frozen=True, slots=True)
class Upstream:
    name: str
    base_url: str
    wire: Wire
    credential: Credential
    headers: dict[str, str] = field(default_factory=dict)
    """More headers the real credential needs (an OAuth bearer's ``anthropic-beta``)."""


@dataclass(frozen=True, slots=True)
class Plan:
    family: str
    upstreams: tuple[Upstream, ...] = ()
    run_env: dict[str, str] = field(default_factory=dict)
    """What the run's environment gets (``STANDIN``, ``base_of(name)`` filled in per run)."""
    drop: tuple[str, ...] = ()
    """Variables of the agent's ``env`` and the gateway's that never reach the run (the real credentials)."""
    hide: tuple[str, ...] = ()
    """Paths below HOME with the credentials: shown to no run."""
    providers: dict[str, str] = field(default_factory=dict)
    """A CLI whose config file names its providers (Codex, OpenCode): provider -> upstream name."""
    unfronted: str | None = None
    """Why this CLI or login cannot be fronted (None: it is)."""
    config: dict[str, Any] = field(default_factory=dict)
    """What of the CLI's own config file (hidden from the run: it holds keys) goes in the run's config, keys out."""


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _claude(env: Mapping[str, str], home: Path) -> Plan:
    drop = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
    hide = (".claude/.credentials.json",)
    if env.get("CLAUDE_CODE_USE_BEDROCK") or env.get("CLAUDE_CODE_USE_VERTEX"):
        return Plan("claude", hide=hide, unfronted="Claude Code on Bedrock or Vertex (cloud credentials) is not "
                    "fronted by the model gateway")
    base = (env.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com").rstrip("/")
    oauth = {"anthropic-beta": "oauth-2025-04-20"}
    headers: dict[str, str]
    login = home / ".claude" / ".credentials.json"
    if env.get("ANTHROPIC_API_KEY"):
        cred, given, headers = Credential("x-api-key", env["ANTHROPIC_API_KEY"], source="ANTHROPIC_API_KEY"), \
            "ANTHROPIC_API_KEY", {}
    elif env.get("ANTHROPIC_AUTH_TOKEN"):
        cred, given, headers = Credential("bearer", env["ANTHROPIC_AUTH_TOKEN"], source="ANTHROPIC_AUTH_TOKEN"), \
            "ANTHROPIC_AUTH_TOKEN", {}
    elif env.get("CLAUDE_CODE_OAUTH_TOKEN"):
        cred, given, headers = Credential("bearer", env["CLAUDE_CODE_OAUTH_TOKEN"],
                                          source="CLAUDE_CODE_OAUTH_TOKEN"), "ANTHROPIC_AUTH_TOKEN", oauth
    elif (_json(login).get("claudeAiOauth") or {}).get("accessToken"):
        cred, given, headers = Credential("bearer", login=login, source=str(login)), "ANTHROPIC_AUTH_TOKEN", oauth
    else:
        cred, given, headers = Credential("none", source="none found"), "ANTHROPIC_API_KEY", {}
    return Plan("claude", (Upstream("anthropic", base, "anthropic", cred, headers),),
                {"ANTHROPIC_BASE_URL": base_of("anthropic"), given: STANDIN}, drop, hide)


def _gemini(env: Mapping[str, str], home: Path) -> Plan:
    drop = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_ACCESS_TOKEN")
    hide = (".gemini/oauth_creds.json", ".gemini/google_accounts.json")
    key_name = "GEMINI_API_KEY" if env.get("GEMINI_API_KEY") else "GOOGLE_API_KEY" if env.get("GOOGLE_API_KEY") \
        else None
    if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
        return Plan("gemini", hide=hide, unfronted="Gemini CLI on Vertex AI (cloud credentials) is not fronted")
    login = home / ".gemini" / "oauth_creds.json"
    if env.get("GOOGLE_GENAI_USE_GCA") == "true" or (key_name is None and login.is_file()):
        # The Google login: the run is given the stand-in as its access token (GOOGLE_CLOUD_ACCESS_TOKEN, which the
        # CLI uses as it is) and Code Assist at the gateway; the gateway holds and refreshes the login file.
        if not (_json(login).get("refresh_token") or _json(login).get("access_token")):
            return Plan("gemini", hide=hide, unfronted=f"Gemini CLI's Google login: {login} holds no token")
        base = (env.get("CODE_ASSIST_ENDPOINT") or CODE_ASSIST).rstrip("/")
        cred = Credential("bearer", login=login, login_kind="google", source=str(login))
        return Plan("gemini", (Upstream("gemini-login", base, "gemini", cred),),
                    {"GOOGLE_GENAI_USE_GCA": "true", "GOOGLE_CLOUD_ACCESS_TOKEN": STANDIN,
                     "CODE_ASSIST_ENDPOINT": base_of("gemini-login")}, (*drop, "CODE_ASSIST_ENDPOINT"), hide)
    base = (env.get("GOOGLE_GEMINI_BASE_URL") or "https://generativelanguage.googleapis.com").rstrip("/")
    cred = Credential("x-goog-api-key", env[key_name], source=key_name) if key_name else \
        Credential("none", source="none found")
    return Plan("gemini", (Upstream("gemini", base, "gemini", cred),),
                {"GOOGLE_GEMINI_BASE_URL": base_of("gemini"), "GEMINI_API_KEY": STANDIN}, drop, hide)


CODE_ASSIST = "https://cloudcode-pa.googleapis.com"
"""Where Gemini CLI's Google login reaches its model (its ``CODE_ASSIST_ENDPOINT``)."""


def _codex(env: Mapping[str, str], home: Path) -> Plan:
    codex_home = Path(env.get("CODEX_HOME") or home / ".codex").expanduser()
    try:
        cfg = tomllib.loads((codex_home / "config.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        cfg = {}
    provider = str(cfg.get("model_provider") or "openai")
    auth_file = codex_home / "auth.json"
    auth = _json(auth_file)
    hide = (str(auth_file.relative_to(home)),) if auth_file.is_relative_to(home) else ()
    drop = ("OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN")
    entry = (cfg.get("model_providers") or {}).get(provider) or {} if provider != "openai" else {}
    if provider != "openai" and not entry.get("base_url"):
        return Plan("codex", hide=hide, unfronted=f"Codex's provider {provider!r} names no base_url")
    if provider == "openai" or (entry.get("requires_openai_auth") and not entry.get("env_key")):
        # The provider takes Codex's own login: OPENAI_API_KEY, the key in auth.json, or the ChatGPT login.
        key = env.get("OPENAI_API_KEY") or auth.get("OPENAI_API_KEY")
        source = "OPENAI_API_KEY" if env.get("OPENAI_API_KEY") else str(auth_file)
        tokens = auth.get("tokens") if isinstance(auth.get("tokens"), dict) else None
        if not key and tokens is not None and auth.get("auth_mode") in (None, "chatgpt"):
            return _chatgpt(env, cfg, provider, entry, auth_file, tokens, drop, hide)
        base = str(entry.get("base_url") or env.get("OPENAI_BASE_URL") or cfg.get("openai_base_url")
                   or "https://api.openai.com/v1")
        key_name = "OPENAI_API_KEY"
    else:
        base, key_name = str(entry["base_url"]), str(entry.get("env_key") or "OPENAI_API_KEY")
        key, source = env.get(key_name), key_name
    cred = Credential("bearer", key, source=source) if key else Credential("none", source="none found")
    return Plan("codex", (Upstream("codex", base.rstrip("/"), "openai", cred),), {key_name: STANDIN},
                (*drop, key_name), hide, providers={provider: "codex"})


CHATGPT_BACKEND = "https://chatgpt.com/backend-api/codex"
"""Where Codex on a ChatGPT login sends its Responses calls (its built-in provider's base URL in that mode)."""


def _chatgpt(env: Mapping[str, str], cfg: Mapping[str, Any], provider: str, entry: Mapping[str, Any],
             auth_file: Path, tokens: Mapping[str, Any], drop: tuple[str, ...], hide: tuple[str, ...]) -> Plan:
    """Codex's ChatGPT login: the run's provider takes the stand-in as its ``env_key`` with the base URL at the
    gateway; the gateway holds ``auth.json``, adds its bearer and ``chatgpt-account-id``, refreshes it at OpenAI's
    token endpoint and writes it back."""
    if not (tokens.get("access_token") or tokens.get("refresh_token")):
        return Plan("codex", hide=hide, unfronted=f"Codex's ChatGPT login: {auth_file} holds no token")
    if not tokens.get("account_id"):
        return Plan("codex", hide=hide, unfronted=f"Codex's ChatGPT login: {auth_file} names no account_id "
                    "(log in again on the host)")
    base = str(entry.get("base_url") or env.get("OPENAI_BASE_URL") or cfg.get("openai_base_url") or CHATGPT_BACKEND)
    cred = Credential("bearer", login=auth_file, login_kind="codex", source=str(auth_file))
    return Plan("codex", (Upstream("chatgpt", base.rstrip("/"), "openai", cred),), {"OPENAI_API_KEY": STANDIN},
                drop, hide, providers={provider: "chatgpt"})


_OPENCODE_BASES = {"anthropic": "https://api.anthropic.com/v1", "openai": "https://api.openai.com/v1",
                   "google": "https://generativelanguage.googleapis.com/v1beta", "openrouter": "https://openrouter.ai/api/v1",
                   "groq": "https://api.groq.com/openai/v1", "mistral": "https://api.mistral.ai/v1",
                   "deepseek": "https://api.deepseek.com/v1", "xai": "https://api.x.ai/v1"}
"""The providers OpenCode knows without a ``baseURL``, where their APIs are."""


def _opencode(env: Mapping[str, str], home: Path) -> Plan:
    cfg_dir, data = home / ".config" / "opencode", home / ".local" / "share" / "opencode"
    hide = (".config/opencode/opencode.json", ".config/opencode/opencode.jsonc", ".config/opencode/config.json",
            ".local/share/opencode/auth.json")
    cfg = _json(cfg_dir / "opencode.json") or _json(cfg_dir / "config.json")
    if (cfg_dir / "opencode.jsonc").is_file() and not cfg:
        return Plan("opencode", hide=hide, unfronted="OpenCode's opencode.jsonc is not read by the model gateway "
                    "(use opencode.json)")
    auth = _json(data / "auth.json")
    entries: dict[str, Any] = dict(cfg.get("provider") or {})
    for name in auth:
        entries.setdefault(name, {})
    upstreams, providers, config, drop = [], {}, {}, []
    for name, entry in entries.items():
        entry = dict(entry) if isinstance(entry, dict) else {}
        opts = dict(entry.get("options") or {})
        found = auth.get(name)
        login: dict[str, Any] = found if isinstance(found, dict) else {}
        if login.get("type") == "oauth":
            return Plan("opencode", hide=hide, unfronted=f"OpenCode's {name} login (OAuth) is not fronted yet: "
                        "give it an API key")
        npm = str(entry.get("npm") or "")
        wire: Wire = "anthropic" if "anthropic" in npm or name == "anthropic" else \
            "gemini" if "google" in npm or name == "google" else "openai"
        base = opts.get("baseURL") or _OPENCODE_BASES.get(name)
        if not base:
            return Plan("opencode", hide=hide, unfronted=f"OpenCode's provider {name!r} names no baseURL")
        env_name = f"{name.upper().replace('-', '_')}_API_KEY"
        key = opts.get("apiKey") or login.get("key") or env.get(env_name)
        if isinstance(key, str) and key.startswith("{env:") and key.endswith("}"):
            key = env.get(key[5:-1])
        how: Literal["x-api-key", "bearer", "x-goog-api-key"] = \
            "x-api-key" if wire == "anthropic" else "x-goog-api-key" if wire == "gemini" else "bearer"
        cred = Credential(how, str(key), source=f"{name}'s apiKey") if key else Credential("none", source="none")
        up = f"opencode-{name}"
        upstreams.append(Upstream(up, str(base).rstrip("/"), wire, cred))
        providers[name] = up
        opts.pop("apiKey", None)
        config[name] = {**entry, "options": opts}
        drop.append(env_name)
    out = {"provider": config, **({"model": cfg["model"]} if cfg.get("model") else {})}
    return Plan("opencode", tuple(upstreams), {}, tuple(drop), hide, providers, config=out)


_PLANS = {"claude": _claude, "gemini": _gemini, "codex": _codex, "opencode": _opencode}


def plan_for(family: str, env: Mapping[str, str], home: Path) -> Plan:
    """How an agent of this CLI family (a runtime's name, or what an ACP preset's ``credentials_of`` names) is
    fronted, from ``env`` (the agent's over the gateway's) and the login files below ``home``."""
    make = _PLANS.get(family)
    if make is None:
        return Plan(family, unfronted=f"the model gateway does not know how to front the {family} runtime")
    return make(env, home)
