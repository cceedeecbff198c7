"""What one agent run sees, and the bubblewrap command line that shows it exactly that.

The sandbox starts empty (a fresh root, ``/proc`` of its own PID namespace, a private ``/dev`` and ``/tmp``) and
shows, read-only, only what programs need to run: the system folders, the interpreter and code of the MCP shim,
the agent CLI's install and the folders on ``PATH``. Read-write it shows the run's workspace, its HOME (a folder
of its own) and the few files the run hands back (the side-effects record). The gateway's private paths (state
dir, config, database) are covered with an empty folder wherever a read-only root would show them.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gateway.sandbox.probe import etc_secrets

__all__ = ["Layout", "bwrap_argv", "install_root", "runtime_roots"]

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
"""Shown read-only (a top-level symlink such as Debian's ``/bin -> usr/bin`` is recreated as the same link)."""

_ETC_OUTSIDE = ("/etc/resolv.conf", "/etc/hosts", "/etc/localtime")
"""Files in /etc that are often links to elsewhere (``/run/systemd/resolve``…): their targets are shown too."""


@dataclass(slots=True)
class Layout:
    """The paths of one run: everything not named here is not in its sight."""

    cwd: Path
    home: Path
    """The host folder the run gets as its HOME (seen at ``home_at``)."""
    home_at: Path
    read: list[Path] = field(default_factory=list)
    write: list[Path] = field(default_factory=list)
    """Folders or files shown read-write at the same path (the workspace, the side-effects file…)."""
    home_binds: list[tuple[Path, Path, bool]] = field(default_factory=list)
    """The CLI's login and settings, shown in the run's HOME: ``(host path, path inside, writable)``."""
    hide: list[Path] = field(default_factory=list)
    """The gateway's own paths: covered wherever another bind would show them."""
    protect: list[Path] = field(default_factory=list)
    """Paths inside read-write ones that stay read-only (a repository's ``.git/config`` and ``.git/hooks``: what
    git outside the sandbox would run)."""
    isolated_net: bool = False


@functools.cache
def runtime_roots() -> tuple[Path, ...]:
    """What the MCP shim needs to start: its interpreter, the virtual environment and its code (the ``mcp_shim``
    and ``gateway`` packages alone: in a clone, the rest of it may hold the owner's files, ``deploy/.env``)."""
    import gateway
    import mcp_shim

    code = {Path(str(p.__file__)).resolve().parent for p in (gateway, mcp_shim)}
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent, *code}
    return tuple(sorted(roots))


def install_root(executable: str) -> Path:
    """The folder to show for an executable: an npm package's whole tree (from the outermost ``node_modules``'s
    parent: its own modules and the ``bin`` links beside it), else the folder the real file is in."""
    real = Path(os.path.realpath(executable))
    parts = real.parts
    if "node_modules" in parts:
        return Path(*parts[:parts.index("node_modules")])
    return real.parent


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def bwrap_argv(bwrap: str, layout: Layout, argv: list[str]) -> list[str]:
    """The ``bwrap`` command that runs ``argv`` inside ``layout``."""
    out = [bwrap, "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try"]
    if layout.isolated_net:
        out.append("--unshare-net")
    for top in _SYSTEM_DIRS:
        if os.path.islink(top):
            out += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            out += ["--ro-bind", top, top]
    for name in _ETC_OUTSIDE:
        real = os.path.realpath(name)
        if not real.startswith(("/etc/", "/usr/")) and os.path.exists(real):
            out += ["--ro-bind", real, real]
    files, dirs = etc_secrets()
    for secret in files:
        out += ["--ro-bind", "/dev/null", secret]
    for folder in dirs:
        out += ["--tmpfs", folder]
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]

    # Mounts go parents first: a bind inside another (a login file in HOME, the workspace's state folder in a
    # hidden state dir) must come after the one it lands in, or that one would cover it.
    mounts: list[tuple[int, int, list[str]]] = []

    def add(dest: Path, order: int, args: list[str]) -> None:
        mounts.append((len(dest.parts), order, args))

    read_only = [Path(p) for p in _SYSTEM_DIRS]
    add(layout.home_at, 0, ["--bind", str(layout.home), str(layout.home_at)])
    homes = (layout.home_at, Path.home())
    for path in sorted(set(layout.read), key=lambda p: len(p.parts)):  # parents first: what is inside one
        if _under(path, read_only) or not path.exists():                 # already shown is not bound again
            continue
        if any(h == path or path in h.parents for h in homes):  # "~" or "/" on PATH would show every HOME
            continue
        read_only.append(path)
        add(path, 0, ["--ro-bind", str(path), str(path)])
    shown = [*read_only, layout.home_at]
    for hidden in layout.hide:  # after what would show it, before anything placed inside it
        if _under(hidden, shown) and hidden.exists():
            add(hidden, 1, ["--tmpfs", str(hidden)] if hidden.is_dir() else ["--ro-bind", "/dev/null", str(hidden)])
    for login, inside, writable in layout.home_binds:
        if login.exists():
            add(inside, 2, ["--bind" if writable else "--ro-bind", str(login), str(inside)])
    for written in layout.write:
        if written.exists():
            add(written, 2, ["--bind", str(written), str(written)])
    for kept in layout.protect:
        if kept.exists():
            add(kept, 3, ["--ro-bind", str(kept), str(kept)])
    for _depth, _order, args in sorted(mounts, key=lambda m: (m[0], m[1])):
        out += args
    out += ["--chdir", str(layout.cwd), "--"]
    return out + argv
