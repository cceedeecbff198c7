"""Run the gateway: bind once, then serve, restarting in place when asked.

The listening socket outlives each ``Gateway``: a restart stops uvicorn, builds a fresh
gateway from the current config and serves the same socket again, so the port never
goes away and reconnecting clients are accepted as soon as the new gateway is up.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
import uvicorn

from gateway import paths
from gateway.composition.gateway import Gateway
from gateway.config import ConfigError, ConfigStore
from gateway.config.reload import register_secrets
from gateway.logs import sink
from gateway.server import gc_freezer
from gateway.server.control_ui import find_root
from gateway.server.loop_watch import LoopWatch
from gateway.store import StoreError

__all__ = ["resolve_token", "run", "serve"]

log = structlog.get_logger("gateway.server.serve")

SETTLE_AFTER_S = 1.0
"""How long after it starts serving the gateway first collects its heap (``gc_freezer.settle``)."""


_ENV_TOKEN: list[str] = []


def _env_token() -> str:
    """``REMOTECLAW_GATEWAY_TOKEN``, read once and then dropped from the environment: nothing started later (an
    agent CLI, a hook, a plugin's subprocess) inherits the gateway's own token. Restarts reuse the value read."""
    if not _ENV_TOKEN:
        _ENV_TOKEN.append(os.environ.pop("REMOTECLAW_GATEWAY_TOKEN", "").strip())
    return _ENV_TOKEN[0]


def resolve_token(store: ConfigStore) -> tuple[str, str]:
    """Token from ``REMOTECLAW_GATEWAY_TOKEN``, else the config, else the state dir (created once).

    Returns:
        The token and where it came from: ``env``, ``config``, ``new`` (the state dir's, created just now)
        or ``state`` (the state dir's, from an earlier start).
    """
    env = _env_token()
    if env:
        return env, "env"
    if store.config.gateway.auth.token:
        return store.config.gateway.auth.token, "config"
    token, created = paths.ensure_token()
    return token, "new" if created else "state"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only then. Without it an
    # event followed by a response on one connection waits ~40 ms for the peer's delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, with signals routed through the gateway so clients hear ``shutdown`` first."""

    gateway: Gateway | None = None

    def handle_exit(self, sig: int, frame: Any) -> None:
        gw = self.gateway
        if gw is None or gw.stopping or self.should_exit:
            self.should_exit = True
            self.force_exit = self.force_exit or (sig == signal.SIGINT and gw is not None and gw.stopping)
            return
        loop = asyncio.get_event_loop()
        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(gw.shutdown("gateway stopping", restart=False)))


def _reload_config(store: ConfigStore) -> None:
    """Re-read the config file for a restart; if it is broken, keep the last good config and say so."""
    try:
        store.load()
    except ConfigError as err:
        errors = (err.details or {}).get("errors", [])
        store.file_issue = {"message": err.message, "errors": errors}
        log.error("config file is invalid; restarting with the last good config", error=err.message,
                  errors=errors)


def _rebind(sock: socket.socket, host: str, port: int) -> socket.socket:
    """A socket for a changed bind/port; on failure keep serving on the old one."""
    current = sock.getsockname()[:2]
    if (host, port) == current or (port == 0 and host == current[0]):
        return sock
    try:
        new = _bind(host, port)
    except OSError as exc:
        log.error("cannot listen on the configured address; staying where we are",
                  bind=host, port=port, error=str(exc), listening=f"{current[0]}:{current[1]}")
        return sock
    sock.close()
    log.info("listening on a new address", bind=host, port=new.getsockname()[1])
    return new


async def serve(*, host: str | None = None, port: int | None = None, announce: bool = True) -> None:
    state = paths.state_dir()
    store = ConfigStore(paths.config_path())
    store.load()
    pinned_host, pinned_port = host, port  # given on the command line: config changes do not move them
    host = host or store.config.gateway.bind
    port = store.config.gateway.port if port is None else port
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    paths.write_listen(host, port)  # client commands on this state dir find us (removed on exit)
    good: tuple[dict[str, Any], Any] | None = None  # the config the last successful start used
    reload = False
    first = True
    try:
        while True:
            if reload:
                _reload_config(store)
                sock = _rebind(sock, pinned_host or store.config.gateway.bind,
                               store.config.gateway.port if pinned_port is None else pinned_port)
                host, port = sock.getsockname()[:2]
                paths.write_listen(host, port)
            reload = True
            cfg = store.config
            register_secrets(store.data, cfg)
            token, origin = resolve_token(store)
            sink.add_secret(token)
            sink.configure(paths.logs_dir(), level=cfg.logging.level, console_level=cfg.logging.consoleLevel,
                           max_bytes=cfg.logging.maxFileBytes, keep=cfg.logging.keepFiles)
            gw = Gateway(state_dir=state, config_store=store, token=token)
            gw.listen = (host, port)
            holder: list[_Server] = []

            def exit_server(holder: list[_Server] = holder) -> None:
                if holder:
                    holder[0].should_exit = True

            try:
                await gw.start(exit_server)
            except Exception:
                # A config change must never leave the gateway dead: go back to the config that worked.
                await gw.stop()
                if good is None or good[0] == store.data:
                    raise
                log.exception("gateway failed to start with the new config; rolling back to the last good config")
                store.adopt(*good)
                store.file_issue = {"message": "the gateway could not start with this file; running the previous "
                                               "config instead", "errors": []}
                reload = False
                continue
            good = (store.data, store.config)
            # The app is built after start so capabilities and channels can add routes (``gateway.http_routes``).
            from gateway.server.app import build_app

            app = build_app(gw)
            server = _Server(uvicorn.Config(
                app,
                ws=app.socket_class,  # our RPC socket driver (gateway.server.rpc_socket); other paths: uvicorn's
                # X-Forwarded-For is honoured from loopback only (uvicorn's default; FORWARDED_ALLOW_IPS widens
                # it): behind a local TLS proxy, clients must keep their own address, or every one of them would
                # look local (auto-approved devices, one shared auth-failure budget).
                proxy_headers=True,
                ws_max_size=cfg.gateway.maxPayload,
                ws_per_message_deflate=False,
                ws_ping_interval=None,
                lifespan="off",
                log_config=None,
                access_log=False,
                timeout_graceful_shutdown=3,
            ))
            server.gateway = gw
            holder.append(server)
            if announce and first:
                ui_root = find_root(cfg.gateway.controlUi)
                _announce(host, port, token, origin, state,
                          control_ui=cfg.gateway.controlUi.basePath if ui_root else None)
            first = False
            settling = asyncio.get_running_loop().call_later(SETTLE_AFTER_S, gc_freezer.settle)
            freezer = gc_freezer.SurvivorFreezer()  # the crowd's objects too, once a full collection gets slow
            freezer.install()
            watch = _watch_loop(store)
            try:
                # uvicorn closes the sockets it served; hand it a duplicate so ours outlives it.
                await server.serve(sockets=[sock.dup()])
            finally:
                settling.cancel()
                watch.stop()
                freezer.close()
                await gw.stop()
            if gw.restart_reason is None:
                break
            log.info("gateway restarting in place", reason=gw.restart_reason)
    finally:
        paths.clear_listen()
        sock.close()
        sink.shutdown()
        gc_freezer.freeze_for_exit()


def _announce(host: str, port: int, token: str, origin: str, state: Path, *, control_ui: str | None = None) -> None:
    """The start banner. The signed-in links carry the token, so they are printed only when a person reads the
    terminal, or once for a state-dir token whose link was never shown (the first start, even one whose output
    goes to a file or a pipe, and even when an earlier first start crashed before it got this far); never into a
    service's captured output on every start. ``control_ui``: the base path OpenClaw's Control UI is served at,
    when it is installed."""
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::", "::1") else host
    lines = [f"remoteclaw gateway listening on ws://{shown}:{port}/  (state: {state})"]
    marker = paths.link_shown_path()
    unseen = origin in ("new", "state") and not marker.exists()
    signed_in = unseen or sys.stdout.isatty()
    if signed_in:
        lines.append(f"  web chat: http://{shown}:{port}/#token={token}")
    else:
        lines.append(f"  web chat: http://{shown}:{port}/  (sign in with the gateway token)")
    if control_ui is not None:
        from gateway.installation import cli_command

        link = f"http://{shown}:{port}{control_ui}/"
        lines.append(f"  control ui: {link}#token={token}" if signed_in
                     else f"  control ui: {link}  (sign in with the gateway token)")
        # Its sign-in page names OpenClaw's commands; say ours.
        lines.append(f"    where it says `openclaw gateway auth-token --show`, run: "
                     f"{cli_command()} gateway auth-token --show")
    if origin == "new":
        lines.append(f"  a new gateway token was written to {state / 'gateway.token'} (mode 0600)")
    print("\n".join(lines), flush=True)
    if unseen:
        marker.touch()


def _watch_loop(store: ConfigStore) -> LoopWatch:
    """Warn in the log about event-loop stalls longer than ``logging.loopStallMs`` (live; 0 turns it off)."""
    watch = LoopWatch(asyncio.get_running_loop(), threshold_s=lambda: store.config.logging.loopStallMs / 1000)
    watch.start()
    return watch


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (faster sockets and timers), unless ``REMOTECLAW_EVENT_LOOP=asyncio``."""
    if os.environ.get("REMOTECLAW_EVENT_LOOP", "").lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(*, host: str | None = None, port: int | None = None) -> int:
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(serve(host=host, port=port))
    except ConfigError as err:
        print(f"remoteclaw: {err.message}", file=sys.stderr)
        for e in (err.details or {}).get("errors", []):
            print(f"  {e['path']}: {e['message']}", file=sys.stderr)
        return 2
    except StoreError as err:  # database unreachable, bad URL, failed migration: one line, no traceback
        print(f"remoteclaw: {err.message}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"remoteclaw: cannot listen: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
