"""``remoteclaw setup``: write (or edit) the config a newcomer needs: which agent CLI answers, and the chat apps.

Interactive in a terminal: it offers the agent CLIs it finds on PATH, asks whether to connect Telegram or
Discord (bot token, the owner's user id), with the current values as defaults, so running it again edits
rather than starts over. ``--non-interactive`` takes the same answers as flags, for scripts. Every other key
of an existing config file is kept; the result is validated before it is written (atomically, the old file
kept as ``remoteclaw.json.bak``).
"""

from __future__ import annotations

import argparse
import getpass
import shutil
import sys
from typing import Any

from gateway import paths

__all__ = ["add_arguments", "run"]

RUNTIMES = ("claude", "codex", "gemini", "opencode")
EXECUTABLE = {"claude": "claude", "codex": "codex", "gemini": "gemini", "opencode": "opencode"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--non-interactive", action="store_true", help="take every answer from the flags")
    parser.add_argument("--agent", choices=RUNTIMES, help="the agent CLI that answers (default agent's runtime)")
    parser.add_argument("--telegram-token", help="Telegram bot token (from @BotFather)")
    parser.add_argument("--telegram-owner", help="your Telegram user id (numeric)")
    parser.add_argument("--discord-token", help="Discord bot token")
    parser.add_argument("--discord-owner", help="your Discord user id (numeric)")


class Asker:
    """Questions in a terminal, each with a default; Enter keeps it."""

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive

    def ask(self, question: str, default: str | None = None, *, secret: bool = False) -> str | None:
        if not self.interactive:
            return default
        shown = f" [{'keep current' if secret and default else default}]" if default else ""
        prompt = f"{question}{shown}: "
        answer = (getpass.getpass(prompt) if secret and sys.stdin.isatty() else input(prompt)).strip()
        return answer or default

    def yes(self, question: str, default: bool) -> bool:
        if not self.interactive:
            return default
        answer = input(f"{question} [{'Y/n' if default else 'y/N'}]: ").strip().lower()
        return default if not answer else answer.startswith("y")


def _owner(data: dict[str, Any], channel: str) -> str | None:
    owners = (data.get("channels") or {}).get("ownerAllowFrom") or []
    return next((o.split(":", 1)[1] for o in owners if isinstance(o, str) and o.startswith(f"{channel}:")), None)


def _set_owner(data: dict[str, Any], channel: str, sender: str) -> None:
    channels = data.setdefault("channels", {})
    owners = [o for o in channels.get("ownerAllowFrom") or [] if not str(o).startswith(f"{channel}:")]
    channels["ownerAllowFrom"] = [*owners, f"{channel}:{sender}"]


def _default_agent(data: dict[str, Any]) -> dict[str, Any]:
    agents = data.setdefault("agents", {})
    listed = agents.setdefault("list", [{"id": "main"}])
    wanted = agents.get("default", "main")
    found = next((a for a in listed if isinstance(a, dict) and a.get("id") == wanted), None)
    if found is None:
        found = {"id": wanted}
        listed.append(found)
    return found


def _channel(data: dict[str, Any], name: str, token_key: str, token: str | None, owner: str | None) -> None:
    section = data.setdefault("channels", {}).setdefault(name, {})
    if token:
        section[token_key] = token
        section["enabled"] = True
    if owner:
        if not owner.isdigit():
            from gateway.config import ConfigError

            raise ConfigError(f"the {name} owner id must be a number (yours, not the bot's): {owner!r}")
        _set_owner(data, name, owner)


def _chat_apps(data: dict[str, Any], args: argparse.Namespace, ask: Asker) -> None:
    """Telegram and Discord: flags first, else questions (defaults: what the config holds)."""
    tg = (data.get("channels") or {}).get("telegram") or {}
    if args.telegram_token or args.telegram_owner or ask.yes("Connect Telegram?", bool(tg.get("botToken"))):
        token = args.telegram_token or ask.ask("Telegram bot token (from @BotFather)", tg.get("botToken"), secret=True)
        owner = args.telegram_owner or ask.ask("Your Telegram user id (e.g. from @userinfobot)",
                                               _owner(data, "telegram"))
        _channel(data, "telegram", "botToken", token, owner)
    dc = (data.get("channels") or {}).get("discord") or {}
    if args.discord_token or args.discord_owner or ask.yes("Connect Discord?", bool(dc.get("token"))):
        token = args.discord_token or ask.ask("Discord bot token", dc.get("token"), secret=True)
        owner = args.discord_owner or ask.ask("Your Discord user id", _owner(data, "discord"))
        _channel(data, "discord", "token", token, owner)


def run(args: argparse.Namespace) -> int:
    # The config model (pydantic) is imported here, not at the top: building the CLI's parser imports this
    # module, and `remoteclaw gateway call` must start without pydantic.
    from gateway.config import ConfigError, ConfigStore
    from gateway.config.model import validate

    store = ConfigStore(paths.config_path())
    try:
        data = store.read_file()
    except ConfigError as exc:
        print(f"remoteclaw setup: {exc.message}\nFix or move the file first (nothing was changed).", file=sys.stderr)
        return 1
    interactive = not args.non_interactive
    if interactive and not sys.stdin.isatty():
        print("(not a terminal: reading the answers from standard input)", file=sys.stderr)
    ask = Asker(interactive)

    agent = _default_agent(data)
    found = [r for r in RUNTIMES if shutil.which(EXECUTABLE[r])]
    current = args.agent or agent.get("runtime") or (found[0] if found else "claude")
    if interactive:
        listed = ", ".join(found) if found else "none (install one: see docs/runtimes.md)"
        print(f"Agent CLIs found on PATH: {listed}")
    runtime = ask.ask(f"Which agent CLI answers ({', '.join(RUNTIMES)})", current) or current
    if runtime not in RUNTIMES:
        print(f"remoteclaw setup: unknown agent CLI {runtime!r} (choose one of {', '.join(RUNTIMES)})", file=sys.stderr)
        return 2
    agent["runtime"] = runtime

    try:
        _chat_apps(data, args, ask)
    except ConfigError as exc:
        print(f"remoteclaw setup: {exc.message} (nothing was written)", file=sys.stderr)
        return 1
    try:
        config = validate(data)
    except ConfigError as exc:
        print(f"remoteclaw setup: {exc.message} (nothing was written)", file=sys.stderr)
        return 1
    store.commit(data, config)
    print(f"wrote {store.path}" + (f" (the previous file is {store.backup_path.name})"
                                   if store.backup_path.exists() else ""))
    if not shutil.which(EXECUTABLE[runtime]):
        print(f"note: {EXECUTABLE[runtime]} is not on PATH yet: install it before the first message")
    print(_next_step())
    return 0


def _next_step() -> str:
    """What to do now, in commands that work for this installation; a gateway already running on this state
    dir reads the new file by itself (it watches it), so it is not to be started again."""
    from gateway.installation import cli_command, start_command

    running = paths.running_url(paths.state_dir())
    doctor = f"{cli_command()} doctor"
    if running:
        page = running.replace("ws://", "http://", 1)
        return (f"the gateway running at {page} applies the new config by itself within a few seconds; "
                f"check everything with: {doctor}")
    return f"next: start the gateway with {start_command()}, then check everything with: {doctor}"
