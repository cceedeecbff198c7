"""How this copy of remoteclaw was installed, so the commands we advise are ones that work here.

Two shapes, told apart by what sits beside the ``gateway`` package:

- **a clone** (``git clone``, then ``./scripts/gateway``): the package is the checkout's own folder, next to
  ``pyproject.toml`` and ``scripts/gateway``, run by the checkout's ``.venv``. The gateway starts with
  ``./scripts/gateway``; an optional part is added by running it with ``REMOTECLAW_EXTRAS=<part>`` (it installs
  the part into ``.venv``, then starts).
- **an installed package** (a wheel into a virtual environment, ``pipx`` or ``uv tool``): the gateway starts
  with ``remoteclaw gateway run``; an optional part is added by installing its libraries into that same
  environment, named one by one (remoteclaw itself may come from a wheel file, not from a package index, so
  ``pip install 'remoteclaw[part]'`` is not something we can count on).

Paths are said as a person can type them: relative when the current folder is the checkout, absolute otherwise,
and ``remoteclaw`` bare only when that name on ``PATH`` is this installation's.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["checkout", "cli_command", "control_ui_advice", "extra_advice", "extra_command", "extra_requirements",
           "how", "start_command"]

OPENCLAW_VERSION = "2026.9.6"
"""The ``openclaw`` release whose Control UI we test against (``scripts/install-openclaw`` pins the same)."""

_ROOT = Path(__file__).resolve().parents[1]


def checkout() -> Path | None:
    """The clone this copy runs from, with the clone's own ``.venv`` (what ``./scripts/gateway`` makes and runs),
    or None: an installed package, or a clone installed into some other environment (``pip install -e``),
    where ``./scripts/gateway`` would install into a ``.venv`` this process does not use."""
    if not ((_ROOT / "pyproject.toml").is_file() and (_ROOT / "scripts" / "gateway").is_file()):
        return None
    try:
        ours = Path(sys.prefix).resolve() == (_ROOT / ".venv").resolve()
    except OSError:
        ours = False
    return _ROOT if ours else None


def how() -> str:
    """``clone``, ``pipx``, ``uv-tool`` or ``package`` (any other environment pip installed into)."""
    if checkout() is not None:
        return "clone"
    prefix = sys.prefix.replace(os.sep, "/")
    if "/pipx/venvs/" in prefix:
        return "pipx"
    if "/uv/tools/" in prefix:
        return "uv-tool"
    return "package"


def _in_checkout(relative: str) -> str:
    """``./scripts/gateway`` when the current folder is the clone, else its absolute path."""
    root = checkout()
    assert root is not None
    try:
        here = Path.cwd().resolve()
    except OSError:
        here = None
    if here == root:
        return relative if relative.startswith(".") else f"./{relative}"
    return shlex.quote(str(root / relative))


def _own_script(name: str) -> str:
    """``name`` when ``PATH`` finds this installation's console script, else its full path."""
    mine = Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin") / name
    found = shutil.which(name)
    if found is not None and (not mine.exists() or Path(found).resolve() == mine.resolve()):
        return name
    return shlex.quote(str(mine)) if mine.exists() else name


def start_command() -> str:
    """The command that starts the gateway here."""
    if checkout() is not None:
        return _in_checkout("scripts/gateway")
    return f"{_own_script('remoteclaw')} gateway run"


def cli_command() -> str:
    """How to type ``remoteclaw`` here (the clone's ``.venv/bin/remoteclaw`` when it is not on ``PATH``)."""
    root = checkout()
    if root is not None:
        venv_cli = root / ".venv" / "bin" / "remoteclaw"
        found = shutil.which("remoteclaw")
        if found is None or not venv_cli.exists() or Path(found).resolve() != venv_cli.resolve():
            return _in_checkout(".venv/bin/remoteclaw") if venv_cli.exists() else "remoteclaw"
        return "remoteclaw"
    return _own_script("remoteclaw")


@functools.cache
def extra_requirements(extra: str) -> tuple[str, ...]:
    """The libraries optional part ``extra`` adds (from this installation's metadata; nested extras followed)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        reqs = requires("remoteclaw") or []
    except PackageNotFoundError:
        return ()
    out: list[str] = []
    marker = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
    for req in reqs:
        spec, _, cond = req.partition(";")
        found = marker.search(cond)
        if found is None or found.group(1) != extra:
            continue
        spec = spec.strip()
        nested = re.fullmatch(r"remoteclaw\[([^\]]+)\]", spec.replace(" ", ""))
        if nested:
            for part in nested.group(1).split(","):
                out += [r for r in extra_requirements(part) if r not in out]
        elif spec not in out:
            out.append(spec)
    return tuple(out)


def extra_advice(extra: str) -> str:
    """What a person does to add ``extra``: the command, and the restart it needs, in one phrase."""
    command = extra_command(extra)
    if checkout() is not None:  # the script installs, then starts the gateway: the running one must stop first
        return f"stop the gateway, then start it with: {command}"
    return f"{command}, then restart the gateway"


def extra_command(extra: str) -> str:
    """The command that adds optional part ``extra`` to this installation (in a clone it also starts the
    gateway)."""
    if checkout() is not None:
        return f"REMOTECLAW_EXTRAS={extra} {_in_checkout('scripts/gateway')}"
    reqs = extra_requirements(extra)
    if not reqs:  # no metadata to read: the package index is the only way left
        return f"pip install 'remoteclaw[{extra}]'"
    named = " ".join(shlex.quote(r) for r in reqs)
    kind = how()
    if kind == "pipx":
        return f"pipx inject remoteclaw {named}"
    if kind == "uv-tool":
        return f"uv pip install --python {shlex.quote(sys.executable)} {named}"
    return f"{shlex.quote(sys.executable)} -m pip install {named}"


def control_ui_advice() -> str:
    """How to install OpenClaw's Control UI for this installation."""
    root = _ROOT if (_ROOT / "scripts" / "install-openclaw").is_file() else None
    if root is not None:
        script = "./scripts/install-openclaw" if Path.cwd().resolve() == root else shlex.quote(
            str(root / "scripts" / "install-openclaw"))
        return (f"{script} (needs npm; puts Node 24 and openclaw {OPENCLAW_VERSION} in .cache/openclaw, about "
                "650 MB), then restart the gateway")
    return (f"install openclaw {OPENCLAW_VERSION} with Node 24.16 or newer (npm install -g "
            f"openclaw@{OPENCLAW_VERSION}), then set gateway.controlUi.root to its dist/control-ui folder and restart "
            "the gateway")
