"""The sandbox service: for each agent run, whether and how it is confined, and the command that does it.

Three ways, in order of preference (docs/sandbox.md):

- **bubblewrap** (Linux): the run sees only what ``Layout`` shows; its own PID namespace hides the gateway's
  process and environment; ``network: none|loopback`` gives it a network namespace of its own, and the MCP
  shim then reaches the gateway through a Unix socket bound into the sandbox (``GatewayRelay``).
- **a Unix user of its own** (``sandbox.user``), where bubblewrap cannot run: the CLI starts as that user; the
  state dir is the gateway user's alone (0700), so the run cannot read it.
- **none**: with ``mode: off`` (the owner was warned), or for an owner's run when neither way is available.
  A non-owner's run is then refused, saying why.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from gateway.sandbox.layout import Layout, bwrap_argv, install_root, runtime_roots
from gateway.sandbox.probe import probe_bwrap
from gateway.sandbox.relay import GatewayRelay

PORTAL_PORT = 4180
"""Inside a sandbox without a network: the loopback port that leads to the gateway (its model gateway)."""
EGRESS_PORT = 4181
"""And the one that leads to the gateway's HTTPS proxy (``HTTPS_PROXY``), when it has an egress allowlist."""

if TYPE_CHECKING:
    from gateway.agents.runtimes.base import Invocation
    from gateway.config import AgentConfig, ConfigStore
    from gateway.sandbox.config import SandboxConfig

__all__ = ["RunConfinement", "Sandbox", "SandboxRefused", "as_user", "git_protected", "user_problem", "wrap_bwrap"]

log = structlog.get_logger("gateway.sandbox")


class SandboxRefused(Exception):
    """This run must be sandboxed and cannot be here; the message says why and what fixes it."""


@dataclass(slots=True)
class RunConfinement:
    """How one run is confined: ``how`` is ``bwrap``, ``user`` or ``none``; ``confine`` rewrites its command."""

    how: str
    settings: SandboxConfig
    confine: Callable[[Invocation], Invocation] | None = None
    visible: tuple[Path, ...] = ()
    """Where the run may name files for the gateway to read (``message_send_attachment``…): its workspace."""
    socket: Path | None = None
    """The Unix socket its MCP shim reaches the gateway through (a run with a network of its own)."""


class Sandbox:
    """Decides each run's confinement from the config and the machine (see the module docstring)."""

    def __init__(self, *, config: ConfigStore, state_dir: Path, private: tuple[Path, ...],
                 relay: GatewayRelay) -> None:
        self._config = config
        self._state_dir = state_dir
        self._private = tuple(p.resolve() for p in (state_dir, *private))
        """The gateway's own paths: hidden from every run wherever a shown folder holds them."""
        self._relay = relay
        self._warned_off = False

    # -- one run ----------------------------------------------------------------------------------

    def settings_for(self, agent: AgentConfig) -> SandboxConfig:
        return self._config.config.agents.sandbox_for(agent)

    async def confinement(self, agent: AgentConfig, *, owner: bool, session_key: str, workspace: Path,
                    write: list[Path], read: list[Path], owner_paths: list[Path],
                    logins: tuple[str, ...], credentials: tuple[str, ...],
                          cli_settings: tuple[str, ...] = (), hide: tuple[str, ...] = (),
                          egress: Path | None = None) -> RunConfinement:
        """How this run is confined, or ``SandboxRefused``.

        Args:
            agent: the agent that runs.
            owner: an owner-tier run (the owner's message, not cron).
            session_key: its session (a non-owner's HOME is the session's own).
            workspace: its working folder (read-write).
            write: more paths it writes (its CLI's state folder, the side-effects file).
            read: files it reads (the plugin tool listing).
            owner_paths: what an owner's run also sees read-write (the agent's configured projects).
            logins: paths below HOME with the CLI's login, shown whole to owner runs.
            credentials: the login's credential files alone, shown to other runs.
            cli_settings: the CLI's configuration it needs, shown read-only to other runs.
            hide: paths below HOME shown to no run (the login's credential files, when the model gateway holds
                them: ``gateway.credentials``); a run shown its login folder finds them empty.
            egress: the relay socket of the gateway's HTTPS proxy, for a run without a network (``HTTPS_PROXY``).
        """
        settings = self.settings_for(agent)
        wanted = settings.mode == "all" or (settings.mode == "non-owner" and not owner)
        relay = await self._relay.socket() if wanted and settings.network_for(owner=owner) != "open" else None
        return await asyncio.to_thread(self._plan, agent, settings, relay, owner=owner, session_key=session_key,
                                       workspace=workspace, write=write, read=read, owner_paths=owner_paths,
                                       logins=logins, credentials=credentials, cli_settings=cli_settings,
                                       hide=hide, egress=egress if relay is not None else None)

    def _plan(self, agent: AgentConfig, settings: SandboxConfig, relay: Path | None, *, owner: bool,
              session_key: str, workspace: Path, write: list[Path], read: list[Path], owner_paths: list[Path],
              logins: tuple[str, ...], credentials: tuple[str, ...],
              cli_settings: tuple[str, ...], hide: tuple[str, ...] = (), egress: Path | None = None) -> RunConfinement:
        visible = (workspace, *[p for p in write if p.is_dir()], *(owner_paths if owner else []),
                   *[Path(b.path).expanduser() for b in settings.binds])
        if settings.mode == "off" or (settings.mode == "non-owner" and owner):
            if settings.mode == "off" and not self._warned_off:
                self._warned_off = True
                log.warning("agent runs are not sandboxed (agents sandbox mode off): a run can read the "
                            "gateway's config, database and token", agent_id=agent.id)
            return RunConfinement("none", settings, visible=visible)
        if probe_bwrap().ok:
            home = self._home(agent.id, owner, session_key)
            real_home = Path(agent.env.get("HOME") or Path.home()).expanduser()  # where the CLI's login is
            layout = Layout(cwd=workspace, home=home, home_at=real_home,
                            isolated_net=settings.network_for(owner=owner) != "open",
                            hide=[*self._private, *(real_home / rel for rel in hide)])
            layout.write = [workspace, *write, *(owner_paths if owner else [])]
            layout.read = [*runtime_roots(), *read]
            portal: list[str] = []
            if relay is not None:  # the model gateway over loopback inside (``portal``), MCP over the socket
                layout.write.append(relay)
                portal = [f"{PORTAL_PORT}={relay}"]
                if egress is not None:
                    layout.write.append(egress)
                    portal.append(f"{EGRESS_PORT}={egress}")
            for bind in settings.binds:
                path = Path(bind.path).expanduser()
                (layout.write if bind.writable else layout.read).append(path)
            layout.read += [Path(a) for a in agent.command or () if os.path.isabs(a) and os.path.isfile(a)]
            layout.protect = git_protected(layout.write)
            for rel in (logins if owner else credentials):
                login = real_home / rel
                if owner and not rel.endswith(".json"):  # the owner's CLI keeps its sessions there (resume,
                    login.mkdir(parents=True, exist_ok=True)  # /handoff at the desk), even on its first run
                layout.home_binds.append((login, login, True))
            if not owner:
                layout.home_binds += [(real_home / rel, real_home / rel, False) for rel in cli_settings]
            bwrap = probe_bwrap().path
            assert bwrap is not None
            return RunConfinement("bwrap", settings, visible=visible, socket=relay,
                                  confine=lambda inv: self._wrap(inv, bwrap, layout, portal))
        if settings.user:
            why = user_problem(settings.user)
            if why is None:
                user = settings.user
                if self._state_dir.stat().st_mode & 0o077:  # the one thing between that user and the state
                    os.chmod(self._state_dir, 0o700)
                owned = [p for p in (workspace, *write, *read) if not p.is_relative_to(self._state_dir)]
                return RunConfinement("user", settings, visible=visible,
                                      confine=lambda inv: as_user(inv, user, owned))
            problem = why
        else:
            problem = probe_bwrap().why
        if owner:
            log.warning("owner's agent run not sandboxed", why=problem, agent_id=agent.id)
            return RunConfinement("none", settings, visible=visible)
        raise SandboxRefused(f"this agent cannot run for you: the gateway cannot sandbox it ({problem}); "
                             "the owner can run `remoteclaw doctor` for the fix")

    def _home(self, agent_id: str, owner: bool, session_key: str) -> Path:
        """A HOME of the run's own, kept between turns: the owner's per agent, anyone else's per session."""
        who = "owner" if owner else hashlib.sha256(session_key.encode()).hexdigest()[:20]
        home = self._state_dir / "sandbox" / "homes" / agent_id / who
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        return home

    def session_home(self, agent_id: str, session_key: str) -> Path | None:
        """The HOME of its own where a session's sandboxed runs (someone else's, not the owner's) keep their CLI's
        conversations, once they have run; None otherwise (the owner's runs keep them in the real HOME)."""
        home = self._state_dir / "sandbox" / "homes" / agent_id / hashlib.sha256(session_key.encode()).hexdigest()[:20]
        return home if home.is_dir() and any(home.iterdir()) else None

    @staticmethod
    def _wrap(inv: Invocation, bwrap: str, layout: Layout, portal: list[str] | None = None) -> Invocation:
        argv = list(inv.argv)
        exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=inv.env.get("PATH") or os.environ.get(
            "PATH"))
        if exe is None or not os.path.exists(exe):
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        argv[0] = exe
        path = (inv.env.get("PATH") or os.environ.get("PATH", "")).split(os.pathsep)
        extra = [Path(d) for d in path if os.path.isabs(d)]
        shown = replace(layout, read=[*layout.read, install_root(exe), *extra], cwd=inv.cwd)
        env = {**inv.env, "HOME": str(layout.home_at), "TMPDIR": "/tmp", "IS_SANDBOX": "1"}
        if portal:  # loopback ports inside that lead to the gateway, then the CLI (``gateway.sandbox.portal``)
            argv = [sys.executable, "-I", "-S", str(Path(__file__).with_name("portal.py")), *portal, "--", *argv]
            if len(portal) > 1:
                env["HTTPS_PROXY"] = env["https_proxy"] = f"http://127.0.0.1:{EGRESS_PORT}"
                env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
        return replace(inv, argv=bwrap_argv(bwrap, shown, argv), env=env)


def wrap_bwrap(inv: Invocation, bwrap: str, layout: Layout) -> Invocation:
    """``inv`` confined by ``layout`` (what a node host uses for the turns it runs: the same rules, its own paths)."""
    return Sandbox._wrap(inv, bwrap, layout)


def user_problem(name: str) -> str | None:
    """Why ``sandbox.user`` cannot be used here (None: it can)."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return f"sandbox.user {name!r} is not a user on this machine (create it: useradd --system {name})"
    if os.geteuid() != 0:
        return "sandbox.user needs the gateway to run as root (to start agent runs as another user)"
    if entry.pw_uid == os.getuid():
        return f"sandbox.user {name!r} is the gateway's own user: it could read the state dir"
    return None


def git_protected(paths: list[Path]) -> list[Path]:
    """What stays read-only inside read-write ``paths``: each git directory's ``config`` and ``hooks`` (what git
    would run, outside the sandbox, the next time it runs there). The gateway's sandbox and a node's use it."""
    return [git / name for git in _git_dirs(paths) for name in ("config", "hooks")]


def _git_dirs(paths: list[Path]) -> list[Path]:
    """The git directories in read-write paths: a project's ``.git``, or a worktree's repository ``.git``."""
    found = []
    for path in paths:
        git = path if path.name == ".git" else path / ".git"
        if git.is_dir():
            found.append(git)
    return found


def as_user(inv: Invocation, user: str, owned: list[Path]) -> Invocation:
    """``inv`` started as ``user``, with HOME its own and the run's paths handed to it (before the start)."""
    entry = pwd.getpwnam(user)
    runs = Path(tempfile.gettempdir()) / "remoteclaw-runs"
    for folder in {p.parent for p in owned} | {p.parent.parent for p in owned}:  # the runs' folders: passable,
        if folder.is_relative_to(runs) and folder.stat().st_uid == os.getuid():  # not listable
            os.chmod(folder, 0o711)
    env = {**inv.env, "HOME": entry.pw_dir, "USER": user, "LOGNAME": user}
    return replace(inv, env=env, user=user, hand_over=[*inv.hand_over, *owned])
