"""The bubblewrap command line a run's layout becomes: what is shown, in which order (pure, no process)."""

from __future__ import annotations

from pathlib import Path

from gateway.sandbox.layout import Layout, bwrap_argv


def mounts(argv: list[str]) -> list[tuple[str, str, str]]:
    """``(kind, source, destination)`` of every bind in ``argv`` (tmpfs: source ``""``)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in ("--bind", "--ro-bind"):
            out.append((argv[i], argv[i + 1], argv[i + 2]))
            i += 3
        elif argv[i] == "--tmpfs":
            out.append((argv[i], "", argv[i + 1]))
            i += 2
        else:
            i += 1
    return out


def test_a_path_that_holds_a_home_is_never_shown(tmp_path: Path) -> None:
    """``~`` (or ``/``) on PATH must not show the owner's whole HOME over the run's own."""
    home, own, tool = tmp_path / "home", tmp_path / "own", tmp_path / "home" / "bin"
    for p in (home, own, tool, tmp_path / "ws"):
        p.mkdir(parents=True, exist_ok=True)
    layout = Layout(cwd=tmp_path / "ws", home=own, home_at=home, read=[home, Path("/"), tool],
                    write=[tmp_path / "ws"])
    shown = mounts(bwrap_argv("bwrap", layout, ["true"]))
    assert ("--bind", str(own), str(home)) in shown
    assert not any(dest in (str(home), "/") and kind == "--ro-bind" for kind, _src, dest in shown)
    assert ("--ro-bind", str(tool), str(tool)) in shown  # what is below a HOME still is
    order = [dest for _k, _s, dest in shown]
    assert order.index(str(home)) < order.index(str(tool))  # the HOME first, then what is placed in it


def test_the_gateways_paths_are_covered_after_what_shows_them_and_before_what_goes_inside(tmp_path: Path) -> None:
    code, state = tmp_path / "clone", tmp_path / "clone" / "state"
    inside = state / "runtimes" / "abc"
    for p in (inside, tmp_path / "own", tmp_path / "ws"):
        p.mkdir(parents=True, exist_ok=True)
    layout = Layout(cwd=tmp_path / "ws", home=tmp_path / "own", home_at=tmp_path / "home", read=[code],
                    write=[tmp_path / "ws", inside], hide=[state, tmp_path / "elsewhere"])
    shown = mounts(bwrap_argv("bwrap", layout, ["true"]))
    order = [(kind, dest) for kind, _src, dest in shown]
    assert order.index(("--ro-bind", str(code))) < order.index(("--tmpfs", str(state))) \
        < order.index(("--bind", str(inside)))
    assert ("--tmpfs", str(tmp_path / "elsewhere")) not in order  # nothing shows it: nothing to cover
