"""``remoteclaw doctor``: one screen saying what is wrong with this installation and the command that fixes it.

Each check gives ``ok``, ``warn`` (works, but something is missing for a capability) or ``fail`` (something
needed is broken); any ``fail`` makes the command exit 1, so scripts and CI can use it. ``--json`` prints
the same as data. Checks talk to the real things (the database, Redis, Telegram's ``getMe``, Discord's
``/users/@me``, each agent CLI's ``--version``) with short timeouts, and never print a secret.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from gateway import extras, paths
from gateway.agents.invocation import INSTALL, cli_argv
from gateway.sandbox.doctor import sandbox_report

__all__ = ["Check", "run_checks"]

TIMEOUT_S = 5.0

# How each agent CLI shows it can work: an API key in the environment or a login file in the home dir.
CREDENTIALS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "claude": (("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"), (".claude/.credentials.json", ".claude.json"),
               "run `claude` once and log in (or set ANTHROPIC_API_KEY)"),
    "codex": (("OPENAI_API_KEY", "CODEX_API_KEY"), (".codex/auth.json",),
              "run `codex login` (or set OPENAI_API_KEY)"),
    "gemini": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), (".gemini/oauth_creds.json", ".gemini/settings.json"),
               "run `gemini` once and log in (or set GEMINI_API_KEY)"),
    "opencode": ((), (".local/share/opencode/auth.json",), "run `opencode auth login`"),
}


@dataclass
class Check:
    name: str
    status: str  # ok | off (an optional part not installed, and not asked for) | warn | fail
    detail: str
    fix: str | None = None


def _state(state: Path) -> Check:
    if not state.is_dir():
        return Check("state dir", "fail", f"{state} does not exist", "start the gateway once, or mkdir -p it")
    if not os.access(state, os.W_OK):
        return Check("state dir", "fail", f"{state} is not writable by this user", f"chown -R $USER {state}")
    loose = state.stat().st_mode & 0o077
    return Check("state dir", "warn" if loose else "ok", f"{state}" + (" (readable by others)" if loose else ""),
                 f"chmod 700 {state}" if loose else None)


def _config(state: Path) -> tuple[Check, Any]:
    from gateway.config import ConfigError, ConfigStore

    path = paths.config_path()
    store = ConfigStore(path)
    try:
        config = store.load()
    except ConfigError as exc:
        return Check("config", "fail", f"{path}: {exc.message}",
                     f"fix the file ({path}), or see it with `remoteclaw config get`"), None
    where = str(path) if path.exists() else f"{path} (absent: all defaults)"
    return Check("config", "ok", where), config


def _token() -> Check:
    if os.environ.get("REMOTECLAW_GATEWAY_TOKEN"):
        return Check("gateway token", "ok", "from REMOTECLAW_GATEWAY_TOKEN")
    if paths.token_path().is_file():
        return Check("gateway token", "ok", str(paths.token_path()))
    return Check("gateway token", "warn", "none yet", "the gateway creates one at its first start")


async def _database(state: Path) -> Check:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from gateway.store.migrate import known_heads
    from gateway.store.urls import database_url, describe_url

    try:
        url = database_url(state)
    except Exception as exc:  # a bad REMOTECLAW_DATABASE_URL
        return Check("database", "fail", str(exc), "fix REMOTECLAW_DATABASE_URL")
    shown = describe_url(url)
    if url.startswith("sqlite") and not await asyncio.to_thread(Path(url.split("///", 1)[1]).exists):
        return Check("database", "ok", f"{shown} (created at the first start)")
    engine = create_async_engine(url)
    try:
        async with asyncio.timeout(TIMEOUT_S), engine.connect() as conn:
            try:
                rows = set((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars())
            except Exception:
                rows = set()
    except Exception as exc:
        return Check("database", "fail", f"{shown}: cannot connect ({str(exc).splitlines()[0][:200]})",
                     "start the database, or fix REMOTECLAW_DATABASE_URL")
    finally:
        await engine.dispose()
    heads = set(known_heads())
    if not rows:
        return Check("database", "ok", f"{shown}: empty (the schema is created at the first start)")
    if rows == heads:
        return Check("database", "ok", f"{shown}: schema current ({len(heads)} heads)")
    return Check("database", "warn", f"{shown}: schema at {', '.join(sorted(rows))}, this version has "
                 f"{', '.join(sorted(heads))}", "start the gateway: it migrates (a newer schema is refused: "
                 "run the newer remoteclaw, or restore a backup)")


async def _redis(config: Any) -> Check | None:
    url = os.environ.get("REMOTECLAW_REDIS_URL") or getattr(config.gateway, "redisUrl", None)
    if not url:
        return None
    try:
        import redis.asyncio as redis
    except ImportError:
        return Check("redis", "fail", "the redis package is not installed", extras.install_hint("redis"))
    client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
    try:
        await client.ping()
    except Exception as exc:
        return Check("redis", "fail", f"cannot reach it ({str(exc)[:200]})", "start Redis, or fix REMOTECLAW_REDIS_URL")
    finally:
        await client.aclose()
    return Check("redis", "ok", "reachable")


def _accounts(section: Any, token_field: str) -> list[tuple[str, Any]]:
    """The enabled accounts of a typed channel section that have a token (none when the type is not installed)."""
    if section is None or isinstance(section, dict):
        return []
    out = [("default", section)] if getattr(section, token_field) else []
    out += [(name, acct) for name, acct in (section.accounts or {}).items() if getattr(acct, token_field)]
    return [(name, acct) for name, acct in out if acct.enabled]


async def _probe(client: httpx.AsyncClient, label: str, url: str, headers: dict[str, str], refused_fix: str,
                 describe: Any) -> Check:
    """One bot's credentials checked against its API: ok with who it is, or why not."""
    try:
        response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return Check(label, "fail", f"cannot reach the API ({type(exc).__name__})", "check the network")
    if response.status_code in (401, 404):
        return Check(label, "fail", f"the bot token was refused ({response.status_code})", refused_fix)
    if response.status_code != 200:
        return Check(label, "fail", f"the API answered {response.status_code}", "try again later")
    return Check(label, "ok", describe(response.json()))


async def _bots(client: httpx.AsyncClient, config: Any) -> list[Check]:
    checks = []
    for name, acct in _accounts(getattr(config.channels, "telegram", None), "botToken"):
        base = (acct.apiBaseUrl or "https://api.telegram.org/bot").rstrip("/")
        checks.append(await _probe(
            client, f"telegram ({name})", f"{base}{acct.botToken}/getMe", {},
            "get the token again from @BotFather and set channels.telegram.botToken",
            lambda body: f"@{body.get('result', {}).get('username')} (bot id {body.get('result', {}).get('id')})"))
    for name, acct in _accounts(getattr(config.channels, "discord", None), "token"):
        base = (acct.apiBase or "https://discord.com/api/v10").rstrip("/")
        checks.append(await _probe(
            client, f"discord ({name})", f"{base}/users/@me", {"Authorization": f"Bot {acct.token}"},
            "reset the token in the Discord Developer Portal and set channels.discord.token",
            lambda body: f"{body.get('username')} (logged in)"))
    return checks


def _agent(agent: Any) -> Check:
    argv = cli_argv(agent)
    label = f"agent {agent.id} ({agent.runtime})"
    binary = shutil.which(argv[0])
    if binary is None:
        fix = INSTALL.get(agent.runtime, f"install {argv[0]}")
        return Check(label, "fail", f"{argv[0]} is not on PATH", f"{fix} (or set agents.list[].command)")
    try:
        out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        version = (out.stdout or out.stderr).strip().splitlines()[0][:80] if (out.stdout or out.stderr) else "?"
    except (OSError, subprocess.TimeoutExpired):
        version = "? (--version did not answer)"
    keys, files, how = CREDENTIALS.get(agent.runtime, ((), (), ""))
    env = {**os.environ, **agent.env}
    home = Path.home()
    logged_in = any(env.get(k) for k in keys) or any((home / f).exists() for f in files)
    if (keys or files) and not logged_in:
        return Check(label, "warn", f"{binary} {version}, but no login or API key found", how)
    return Check(label, "ok", f"{binary} {version}")


def _capability_rows(config: Any) -> list[tuple[str, str, str, str | None]]:
    """The lines each capability declares (``Capability.doctor``): the model gateway's credentials and egress."""
    from gateway.composition.capabilities import declared, load

    return [row for cap in declared() if cap.doctor for row in load(cap.doctor)(config)]


def _capabilities(config: Any) -> list[Check]:
    checks = []
    tts = config.messages.tts
    if shutil.which("espeak-ng"):
        checks.append(Check("voice (offline)", "ok", "espeak-ng found"))
    else:
        checks.append(Check("voice (offline)", "warn" if tts.enabled else "ok",
                            "espeak-ng not installed: no offline speech", "apt-get install espeak-ng"))
    if extras.installed("desktop"):
        checks.append(_desktop())
    if not extras.installed("browser"):
        return checks  # the optional part's own line says how to add it
    chromium, why = _chromium()
    checks.append(Check("chromium (for a node's canvas/browser)", "ok" if chromium else "warn",
                        chromium or str(why), None if chromium else "apt-get install chromium"))
    return checks


def _desktop() -> Check:
    """Whether a node on this machine would offer the desktop, and why not: the node host's own answer
    (``remoteclaw-node desktop show``, run as the node would be: the gateway imports nothing of ``nodes``)."""
    import sys

    label = "desktop (for a node's Cua Driver tools)"
    try:
        done = subprocess.run([sys.executable, "-m", "nodes", "desktop", "show"], capture_output=True, text=True,
                              timeout=60, check=False)
        found = json.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        return Check(label, "warn", f"remoteclaw-node desktop show failed: {exc}")
    if found.get("available"):
        return Check(label, "ok", f"cua-driver {found.get('version') or '?'} on {found.get('display')}, "
                                  f"accessibility bus reachable, {len(found.get('tools') or [])} tools")
    how = {"display": "run the node inside the desktop session (DISPLAY set)",
           "at-spi": "apt-get install at-spi2-core; run the node in a session with D-Bus",
           "cua-driver": extras.install_hint("desktop")}.get(str(found.get("missing")))
    return Check(label, "warn", str(found.get("unavailableBecause")), how)


def _extras(config: Any) -> list[Check]:
    """One line per optional part: installed, or not (``off``, with the command), and a configured part whose
    library is missing as ``fail`` (chat channels) or ``warn`` (voice, memory embeddings): the gateway runs
    without it, but what the config asks for does not work."""
    wanted = {
        "telegram": ("fail", bool(_accounts(getattr(config.channels, "telegram", None), "botToken"))),
        "discord": ("fail", bool(_accounts(getattr(config.channels, "discord", None), "token"))),
        "tts": ("warn", bool(config.messages.tts.enabled)),
        "embeddings": ("warn", any(e.config.get("embeddings") for e in config.plugins.entries.values())),
    }
    checks = []
    for part in extras.EXTRAS:
        name = f"optional part {part.name}"
        if extras.installed(part.name):
            checks.append(Check(name, "ok", f"installed: {part.purpose}"))
            continue
        level, configured = wanted.get(part.name, ("off", False))
        detail = f"not installed: {part.purpose}" + (" (the config uses it)" if configured else "")
        checks.append(Check(name, level if configured else "off", detail, extras.install_hint(part.name)))
    return checks


def _chromium() -> tuple[str | None, str | None]:
    """Where a node on this machine would find Chromium (the node host looks the same way)."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return None, "Playwright is not installed"
    for name in filter(None, (os.environ.get("REMOTECLAW_CHROMIUM"), "chromium", "chromium-browser",
                              "google-chrome")):
        found = shutil.which(name)
        if found:
            return found, None
    return None, "no Chromium found"


def _control_ui(config: Any) -> Check:
    """OpenClaw's Control UI: served (where from), off, or not installed with the command that installs it."""
    from gateway.installation import control_ui_advice
    from gateway.server.control_ui import find_root

    cfg = config.gateway.controlUi
    name = "control ui (OpenClaw's panel, optional)"
    if not cfg.enabled:
        return Check(name, "off", "turned off (gateway.controlUi.enabled is false)")
    root = find_root(cfg)
    if root is not None:
        return Check(name, "ok", f"installed: {root}, served at {cfg.basePath.rstrip('/')}/")
    if cfg.root:
        return Check(name, "warn", f"gateway.controlUi.root is {cfg.root}, which holds no index.html",
                     "point it at the dist/control-ui folder of an openclaw install, or " + control_ui_advice())
    return Check(name, "off", "not installed (the web chat does not need it)", control_ui_advice())


def _port(config: Any, state: Path) -> Check:
    port = int(os.environ.get("REMOTECLAW_PORT") or config.gateway.port)
    bind = config.gateway.bind if config.gateway.bind not in ("0.0.0.0", "::") else "127.0.0.1"
    running = paths.running_url(state)  # a gateway on this state dir, wherever it listens (--port included)
    if running:
        address = running.removeprefix("ws://").rstrip("/")
        bind, port = address.rsplit(":", 1)[0].strip("[]"), int(address.rsplit(":", 1)[1])
    try:
        with httpx.Client(timeout=2) as client:
            health = client.get(f"http://{bind}:{port}/healthz").json()
        if health.get("ok"):
            return Check("gateway port", "ok", f"{port}: a remoteclaw gateway is running there "
                         f"(version {health.get('version')})")
    except (httpx.HTTPError, ValueError):
        pass
    with socket.socket() as s:
        if s.connect_ex((bind, port)) == 0:
            return Check("gateway port", "fail", f"{port} is taken by another program",
                         "stop it, or set gateway.port (remoteclaw config set gateway.port 18790)")
    return Check("gateway port", "ok", f"{port} is free")


async def run_checks() -> list[Check]:
    state = paths.state_dir()
    checks = [_state(state)]
    config_check, config = _config(state)
    checks += [config_check, _token(), await _database(state)]
    if config is None:
        return checks
    redis_check = await _redis(config)
    if redis_check is not None:
        checks.append(redis_check)
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
        checks += await _bots(client, config)
    # An agent placed on a node runs its node's CLI, not this machine's: its line is agent_hosts' (below).
    checks += [await asyncio.to_thread(_agent, agent) for agent in config.agents.list if agent.node is None]
    checks += [Check(*row) for row in await asyncio.to_thread(sandbox_report, config)]
    checks += [Check(*row) for row in await asyncio.to_thread(_capability_rows, config)]
    checks += _extras(config)
    checks += _capabilities(config)
    checks.append(_control_ui(config))
    checks.append(await asyncio.to_thread(_port, config, state))
    return checks


def render(checks: list[Check], as_json: bool) -> str:
    if as_json:
        return json.dumps({"ok": not any(c.status == "fail" for c in checks), "checks": [asdict(c) for c in checks]},
                          indent=2)
    marks = {"ok": "✓", "off": "·", "warn": "!", "fail": "✗"}
    lines = []
    for c in checks:
        lines.append(f"{marks[c.status]} {c.name}: {c.detail}")
        if c.fix and c.status != "ok":
            lines.append(f"    → {c.fix}")
    failed = sum(c.status == "fail" for c in checks)
    warned = sum(c.status == "warn" for c in checks)
    lines.append("")
    lines.append(f"{failed} problem(s), {warned} warning(s)" if failed or warned else "all good")
    return "\n".join(lines)
