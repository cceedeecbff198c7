"""The ``remoteclaw`` command line: the parser and the built-in commands here; ``doctor``, ``wizard``
(``remoteclaw setup``) and ``backup`` beside it. What an install is made of (``gateway.extras``,
``gateway.installation``) sits outside the package: the capabilities read it too.

Imports are lazy on purpose: ``remoteclaw gateway call health`` runs as a cold process in
scripts and health checks, so it must not load the server (uvicorn, SQLAlchemy, pydantic).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["CliError", "call_gateway", "call_gateway_all", "client_options", "main", "print_json", "start_command"]

ALL_SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"]


class CliError(Exception):
    """A problem to report in one line and exit non-zero."""


# -- connection settings -----------------------------------------------------------------------


def _state_dir() -> Path:
    return Path(os.environ.get("REMOTECLAW_STATE_DIR") or Path.home() / ".remoteclaw").expanduser()


def _config_file() -> Path:
    override = os.environ.get("REMOTECLAW_CONFIG_PATH")
    return Path(override).expanduser() if override else _state_dir() / "remoteclaw.json"


def _configured_port() -> int:
    path = _config_file()
    if path.exists():
        try:
            import json5

            data = json5.loads(path.read_text())
            port = data.get("gateway", {}).get("port")
            if isinstance(port, int) and port > 0:
                return port
        except (ValueError, OSError, AttributeError):
            pass
    return 18789


def resolve_url(given: str | None) -> str:
    """``--url``, else ``REMOTECLAW_GATEWAY_URL``, else where the gateway running on this state dir says it
    listens (``gateway.listen.json``: a ``--port`` given on its command line included), else the config's port."""
    if given:
        return given
    env = os.environ.get("REMOTECLAW_GATEWAY_URL")
    if env:
        return env
    from gateway.paths import running_url

    return running_url(_state_dir()) or f"ws://127.0.0.1:{_configured_port()}/"


def resolve_token(given: str | None) -> str | None:
    if given:
        return given
    env = os.environ.get("REMOTECLAW_GATEWAY_TOKEN")
    if env:
        return env
    path = _state_dir() / "gateway.token"
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def print_json(value: Any) -> None:
    """``--json`` output of every command: indented, one document, newline-terminated."""
    import orjson

    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def call_gateway(url: str | None, token: str | None, method: str, params: Any, *, timeout: float = 30.0,
          scopes: list[str] | None = None) -> Any:
    """One request on a fresh connection; raises CliError with a message a person can act on."""
    return call_gateway_all(url, token, [(method, params)], timeout=timeout, scopes=scopes)[0]


def call_gateway_all(url: str | None, token: str | None, calls: list[tuple[str, Any]], *, timeout: float = 30.0,
                     scopes: list[str] | None = None) -> list[Any]:
    """Several requests, one after the other, on one fresh connection; their payloads in order."""
    import asyncio

    from gateway.protocol import RpcError
    from mcp_shim.client import GatewayClient

    target = resolve_url(url)

    async def go() -> list[Any]:
        client = GatewayClient(target, resolve_token(token), client_id="cli", mode="cli",
                               scopes=scopes or ALL_SCOPES, timeout=timeout)
        try:
            await client.connect(open_timeout=min(timeout, 10.0))
            return [await client.request(method, params, timeout=timeout, reconnect=False)
                    for method, params in calls]
        finally:
            await client.close()

    try:
        return asyncio.run(go())
    except RpcError as err:
        code = (err.details or {}).get("code")
        hint = ""
        if code in ("AUTH_TOKEN_MISMATCH", "AUTH_REQUIRED"):
            hint = " (pass --token, or set REMOTECLAW_GATEWAY_TOKEN)"
        raise CliError(f"{err.code}: {err.message}{hint}") from None
    except (OSError, TimeoutError) as err:
        raise CliError(f"cannot reach the gateway at {target}: {err or type(err).__name__}"
                       f" (is it running? start it with: {start_command()})") from None
    except Exception as err:  # websockets handshake errors and the like
        raise CliError(f"cannot talk to the gateway at {target}: {err}") from None


def start_command() -> str:
    """How a person starts the gateway of this installation, as they can type it (see ``gateway.installation``)."""
    from gateway.installation import start_command as how

    return how()


def _parse_json(text: str, what: str) -> Any:
    import json5

    try:
        return json5.loads(text)
    except ValueError as exc:
        raise CliError(f"{what} is not valid JSON: {' '.join(str(exc).split())}") from None


def _print(value: Any, compact: bool) -> None:
    import orjson

    opts = 0 if compact else orjson.OPT_INDENT_2
    sys.stdout.write(orjson.dumps(value, option=opts).decode() + "\n")


# -- commands ------------------------------------------------------------------------------------


def cmd_gateway_run(args: argparse.Namespace) -> int:
    from gateway.server import gc_freezer

    gc_freezer.pause_for_start()  # while the server's modules load; ``serve`` settles the heap once it answers
    from gateway.server.serve import run

    return run(host=args.bind, port=args.port)


def cmd_gateway_call(args: argparse.Namespace) -> int:
    raw = args.params if args.params is not None else args.json_params
    params = _parse_json(raw, "params") if raw else None
    result = call_gateway(args.url, args.token, args.method, params, timeout=args.timeout)
    _print(result, args.json)
    return 0


def cmd_gateway_auth_token(args: argparse.Namespace) -> int:
    """Where the gateway token comes from, and with ``--show`` the token itself (OpenClaw's Control UI asks
    for ``openclaw gateway auth-token --show``: this is ours)."""
    env = os.environ.get("REMOTECLAW_GATEWAY_TOKEN", "").strip()
    token, where = (env, "the environment variable REMOTECLAW_GATEWAY_TOKEN") if env else (None, "")
    if token is None:
        import json5

        try:
            data = json5.loads(_config_file().read_text()) if _config_file().exists() else {}
            configured = ((data.get("gateway") or {}).get("auth") or {}).get("token")
        except (ValueError, OSError, AttributeError):
            configured = None
        if isinstance(configured, str) and configured.strip():
            token, where = configured.strip(), f"gateway.auth.token in {_config_file()}"
    if token is None:
        path = _state_dir() / "gateway.token"
        try:
            token = path.read_text().strip() or None
        except OSError:
            token = None
        where = str(path)
    if token is None:
        raise CliError(f"no gateway token yet: the gateway writes one to {where} at its first start "
                       f"(start it with: {start_command()})")
    if args.show:
        print(token)
    else:
        print(f"the gateway token is in {where}; print it with: {cli_command()} gateway auth-token --show")
    return 0


def cli_command() -> str:
    from gateway.installation import cli_command as how

    return how()


def cmd_config_get(args: argparse.Namespace) -> int:
    """The config (or one key); for ``gateway.port``, the port the running gateway really listens on, which
    ``gateway run --port`` may have set apart from the config (both are then said)."""
    params = {"key": args.key} if args.key else None
    result, status = call_gateway_all(args.url, args.token, [("config.get", params), ("status", None)])
    value = result.get("value") if args.key else result
    configured = _lookup_port(result, args.key)
    listening = (status.get("listen") or {}).get("port") if isinstance(status, dict) else None
    if isinstance(listening, int) and configured is not None and listening != configured:
        if args.key == "gateway.port":
            value = listening
        print(f"remoteclaw: note: the running gateway listens on port {listening} (given with --port when it "
              f"started); the config says {configured}, which applies when it starts without --port",
              file=sys.stderr)
    _print(value, args.json)
    return 0


def _lookup_port(result: dict[str, Any], key: str | None) -> int | None:
    """``gateway.port`` as the config answer holds it, when the key asked for covers it."""
    if key == "gateway.port":
        port = result.get("value")
    elif key in (None, "gateway"):
        section = (result.get("value") if key else (result.get("config") or {}).get("gateway")) or {}
        port = section.get("port") if isinstance(section, dict) else None
    else:
        return None
    return port if isinstance(port, int) else None


def cmd_config_schema(args: argparse.Namespace) -> int:
    _print(call_gateway(args.url, args.token, "config.schema", None)["schema"], args.json)
    return 0


def _current_hash(args: argparse.Namespace) -> str:
    return str(call_gateway(args.url, args.token, "config.get", None)["hash"])


def cmd_config_patch(args: argparse.Namespace) -> int:
    patch = _parse_json(args.patch, "the patch")
    if not isinstance(patch, dict):
        raise CliError("the patch must be a JSON object")
    base = args.base_hash or _current_hash(args)
    _print(call_gateway(args.url, args.token, "config.patch", {"patch": patch, "baseHash": base}), args.json)
    return 0


def cmd_config_set(args: argparse.Namespace) -> int:
    value = _parse_json(args.value, "the value")
    base = args.base_hash or _current_hash(args)
    _print(call_gateway(args.url, args.token, "config.set", {"key": args.key, "value": value, "baseHash": base}),
           args.json)
    return 0


def cmd_config_apply(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    config = _parse_json(text, args.file)
    if not isinstance(config, dict):
        raise CliError("the config must be a JSON object")
    base = args.base_hash or _current_hash(args)
    _print(call_gateway(args.url, args.token, "config.apply", {"config": config, "baseHash": base}), args.json)
    return 0


# -- parser --------------------------------------------------------------------------------------


def client_options(*parsers: argparse.ArgumentParser) -> None:
    """``--url``, ``--token`` and ``--json`` on each sub-command that is a client of a running gateway (the
    ``call_gateway`` defaults apply when they are not given)."""
    for p in parsers:
        p.add_argument("--url", help="gateway WebSocket URL (default: $REMOTECLAW_GATEWAY_URL, else the gateway "
                                     "running on this state dir, else the config's port)")
        p.add_argument("--token", help="gateway token (default: $REMOTECLAW_GATEWAY_TOKEN or the state dir's token)")
        p.add_argument("--json", action="store_true", help="print JSON")


def _conn_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", help="gateway WebSocket URL (default: $REMOTECLAW_GATEWAY_URL, else the gateway running "
                                 "on this state dir, else ws://127.0.0.1:<config port>/)")
    p.add_argument("--token", help="gateway token (default: $REMOTECLAW_GATEWAY_TOKEN or the state dir's token)")
    p.add_argument("--json", action="store_true", help="print compact JSON")


def cmd_sessions_list(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"limit": args.limit, "includeDerivedTitles": True}
    if args.search:
        params["search"] = args.search
    if args.agent:
        params["agentId"] = args.agent
    result = call_gateway(args.url, args.token, "sessions.list", params)
    if args.json:
        print_json(result)
        return 0
    sessions = result.get("sessions") or []
    if not sessions:
        print("no sessions yet (a session starts with the first message to an agent)")
        return 0
    for row in sessions:
        when = _when_ms(row.get("updatedAt"))
        title = row.get("label") or row.get("derivedTitle") or ""
        tokens = row.get("totalTokens") or 0
        print(f"{row.get('key', '?'):48} {when:20} {tokens:>8} tok  {title}".rstrip())
    return 0


def cmd_sessions_history(args: argparse.Namespace) -> int:
    result = call_gateway(args.url, args.token, "chat.history", {"sessionKey": args.key, "limit": args.limit})
    if args.json:
        print_json(result)
        return 0
    messages = result.get("messages") or []
    if not messages:
        print(f"no messages in {result.get('sessionKey', args.key)} yet")
    for m in messages:
        print(f"[{_when_ms(m.get('ts'))}] {m.get('role', '?')}: {m.get('text') or ''}")
    return 0


def _when_ms(ms: Any) -> str:
    from datetime import UTC, datetime

    if not isinstance(ms, int | float) or not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def cmd_setup(args: argparse.Namespace) -> int:
    from gateway.cli.wizard import run

    return run(args)


def cmd_doctor(args: argparse.Namespace) -> int:
    import asyncio

    from gateway.cli.doctor import render, run_checks

    checks = asyncio.run(run_checks())
    print(render(checks, args.json))
    return 1 if any(c.status == "fail" for c in checks) else 0


def cmd_backup(args: argparse.Namespace) -> int:
    import time

    from gateway import paths
    from gateway.cli.backup import BackupError, create

    state = paths.state_dir()
    output = args.output or Path(f"remoteclaw-backup-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz")
    try:
        manifest = create(state, output)
    except BackupError as exc:
        raise CliError(str(exc)) from None
    size = output.stat().st_size
    print(f"backed up {state} ({manifest['database']} database, {', '.join(manifest['files']) or 'no files'}) "
          f"to {output} ({size / 1024:.0f} KiB)")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from gateway import paths
    from gateway.cli.backup import BackupError, restore

    state = paths.state_dir()
    try:
        manifest = restore(args.archive, state, force=args.force)
    except BackupError as exc:
        raise CliError(str(exc)) from None
    print(f"restored {args.archive} (taken by remoteclaw {manifest['remoteclawVersion']}) into {state}; "
          f"start the gateway to use it")
    return 0


def build_parser(*, extensions: bool = True) -> argparse.ArgumentParser:
    """The whole command tree; ``extensions=False`` leaves out other packages' commands (their lookup
    costs ~30 ms of start-up that ``remoteclaw gateway call`` need not pay)."""
    parser = argparse.ArgumentParser(prog="remoteclaw", description="Drive coding agents from chat apps.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    gw = sub.add_parser("gateway", help="run the gateway or call its methods")
    gws = gw.add_subparsers(dest="gateway_command", metavar="SUBCOMMAND")
    gws.required = True
    run = gws.add_parser("run", help="run the gateway in the foreground")
    run.add_argument("--port", type=int, default=None, help="port to listen on (default: config, 18789)")
    run.add_argument("--bind", default=None, help="address to bind (default: config, 127.0.0.1)")
    run.set_defaults(func=cmd_gateway_run)
    call = gws.add_parser("call", help="call one gateway method and print the result")
    call.add_argument("method", help="method name, e.g. health or sessions.list")
    call.add_argument("json_params", nargs="?", metavar="JSON", help="params as a JSON object")
    call.add_argument("--params", help="params as a JSON object (same as the positional JSON)")
    call.add_argument("--timeout", type=float, default=30.0, help="seconds to wait (default 30)")
    _conn_opts(call)
    call.set_defaults(func=cmd_gateway_call)
    auth_token = gws.add_parser("auth-token", help="say where the gateway token is; --show prints it (for a "
                                                   "sign-in page such as OpenClaw's Control UI)")
    auth_token.add_argument("--show", action="store_true", help="print the token itself")
    auth_token.set_defaults(func=cmd_gateway_auth_token)

    cfg = sub.add_parser("config", help="read and change the gateway's config")
    cfgs = cfg.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    cfgs.required = True
    get = cfgs.add_parser("get", help="print the config (secrets redacted) or one dotted key")
    get.add_argument("key", nargs="?", help="dotted key, e.g. gateway.port")
    _conn_opts(get)
    get.set_defaults(func=cmd_config_get)
    schema = cfgs.add_parser("schema", help="print the config's JSON Schema")
    _conn_opts(schema)
    schema.set_defaults(func=cmd_config_schema)
    patch = cfgs.add_parser("patch", help="apply a JSON merge patch (RFC 7396)")
    patch.add_argument("patch", help='JSON object, e.g. \'{"logging": {"level": "debug"}}\'')
    patch.add_argument("--base-hash", help="refuse if the config changed since this hash (default: current)")
    _conn_opts(patch)
    patch.set_defaults(func=cmd_config_patch)
    cset = cfgs.add_parser("set", help="set one dotted key to a JSON value")
    cset.add_argument("key")
    cset.add_argument("value", help="JSON value (strings need quotes: '\"debug\"')")
    cset.add_argument("--base-hash")
    _conn_opts(cset)
    cset.set_defaults(func=cmd_config_set)
    apply = cfgs.add_parser("apply", help="replace the whole config with a JSON/JSON5 file ('-' for stdin)")
    apply.add_argument("file")
    apply.add_argument("--base-hash")
    _conn_opts(apply)
    apply.set_defaults(func=cmd_config_apply)

    sessions = sub.add_parser("sessions", help="list the gateway's sessions and read their messages")
    sess = sessions.add_subparsers(dest="sessions_command", metavar="SUBCOMMAND")
    sess.required = True
    slist = sess.add_parser("list", help="sessions, most recently active first")
    slist.add_argument("--search", help="only sessions whose key or label contains this")
    slist.add_argument("--agent", help="only this agent's sessions")
    slist.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    client_options(slist)
    slist.set_defaults(func=cmd_sessions_list)
    shist = sess.add_parser("history", help="a session's messages, oldest first")
    shist.add_argument("key", help="session key, e.g. agent:main:main (see: remoteclaw sessions list)")
    shist.add_argument("--limit", type=int, default=50, help="the last this many (default 50)")
    client_options(shist)
    shist.set_defaults(func=cmd_sessions_history)

    setup = sub.add_parser("setup", help="choose the agent CLI and connect Telegram or Discord (edits the config)")
    from gateway.cli.wizard import add_arguments as setup_arguments

    setup_arguments(setup)
    setup.set_defaults(func=cmd_setup)
    doctor = sub.add_parser("doctor", help="check this installation and say what to fix")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=cmd_doctor)
    backup = sub.add_parser("backup", help="write a consistent snapshot of the gateway's state (it may be running)")
    backup.add_argument("--output", "-o", type=Path, default=None,
                        help="the archive to write (default: ./remoteclaw-backup-<date>.tar.gz)")
    backup.set_defaults(func=cmd_backup)
    restore = sub.add_parser("restore", help="put a backup back into the state dir (stop the gateway first)")
    restore.add_argument("archive", type=Path)
    restore.add_argument("--force", action="store_true", help="replace the database and files already there")
    restore.set_defaults(func=cmd_restore)

    if extensions:
        _add_plugin_commands(sub)
    return parser


def _add_plugin_commands(sub: Any) -> None:
    """Commands owned by other packages and by the capabilities (the MCP shim, channels, nodes, plugins, cron,
    remote MCP): the ``remoteclaw.cli`` extension point, so this module names none of them. One whose library is
    missing is left out."""
    from gateway.composition.entry_points import CLI_COMMANDS

    for name in CLI_COMMANDS.names():
        try:
            register = CLI_COMMANDS.load(name)
        except ModuleNotFoundError:
            continue
        register(sub)


BUILTIN_COMMANDS = frozenset({"gateway", "config", "sessions", "backup", "restore", "doctor", "setup"})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(extensions=not argv or argv[0] not in BUILTIN_COMMANDS).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as err:
        print(f"remoteclaw: {' '.join(str(err).split())}", file=sys.stderr)  # always one line
        return 1
    except KeyboardInterrupt:
        return 130
