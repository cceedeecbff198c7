"""The packages depend one way: the gateway names no module of ``channels/``, ``nodes/`` or ``plugins/``;
those (and the MCP shim) use only the gateway's public surface. Read from the source, so a lazy import
inside a function counts as much as one at the top of a module."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from gateway.composition.capabilities import CAPABILITIES
from tests.support import ROOT

PLATFORM_PACKAGES = ("channels", "nodes", "plugins")
GATEWAY_PUBLIC = {
    # what a platform package may import from the gateway (docs/architecture.md, "Dependencies")
    "gateway.protocol",  # frames and the error family
    "gateway.platforms",  # the messages, the ChatPlatforms interface, PlatformHost, config models
    "gateway.config.channels",  # what a channel's own config model is built from (read while the config is built)
    "gateway.composition.entry_points",  # the registries it adds channel types or runtimes to
    "gateway.extras",  # which pip extra brings a library, and the error naming it
    "gateway.cli",  # call_gateway(), for CLI sub-commands that are clients of a running gateway
    "gateway.plugin_host",  # the plugin API: PluginApi, ToolContext, ToolFailed, text(), image(), Database
    # a node host running agent turns (nodes/agents): the gateway's sandbox layout and process runner, so a turn
    # on a node is confined and run by the same rules as one on the gateway's machine
    "gateway.sandbox.layout", "gateway.sandbox.probe", "gateway.sandbox.service",
    "gateway.agents.runtimes.base", "gateway.agents.runtimes.process",
    # and the files of such a turn written and read by the same rules: where they go in the turn's folder, never
    # through a link
    "gateway.agents.workspace", "gateway.projects.workdir", "gateway.sandbox.open_beneath",
    # and the projects' git helpers, so a node's project, worktree and diff are made as the gateway makes its own
    "gateway.projects.diffs",
}
SHIM_ALLOWED = {"gateway.protocol", "gateway"}  # the package itself: its __version__


def _is_module(name: str, root: Path) -> bool:
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(package: str, root: Path = ROOT) -> Iterator[tuple[Path, int, str]]:
    """(file, line, imported module) for every import in a package, wherever it stands. Module names are whole:
    ``from gateway.platforms import Inbound`` imports ``gateway.platforms``, ``from gateway import config``
    imports ``gateway.config``."""
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, node.lineno, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    yield path, node.lineno, sub if _is_module(sub, root) else node.module
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) ==
                  "import_module" and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)):
                yield path, node.lineno, node.args[0].value


def _top(module: str) -> str:
    return module.split(".")[0]


def _within(module: str, packages: Iterable[str]) -> bool:
    """Whether ``module`` is one of ``packages`` or inside one (``gateway.cron.service`` is in ``gateway.cron``)."""
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_gateway_imports_no_platform_package() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports("gateway")
           if _top(mod) in PLATFORM_PACKAGES]
    assert not bad, "the gateway must find these through gateway.composition.entry_points instead:\n" + "\n".join(bad)


@pytest.mark.parametrize("package", [*PLATFORM_PACKAGES])
def test_platform_packages_use_only_the_gateways_public_surface(package: str) -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports(package)
           if _top(mod) == "gateway" and mod not in GATEWAY_PUBLIC]
    assert not bad, "\n".join(bad)


def test_the_shim_imports_only_the_protocol_from_the_gateway() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports("mcp_shim")
           if _top(mod) == "gateway" and mod not in SHIM_ALLOWED]
    assert not bad, "\n".join(bad)


def test_the_check_sees_lazy_imports(tmp_path: Path) -> None:
    """The scan is only worth something if an import inside a function is caught too."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "import os\n\ndef f():\n    from channels import manager\n    import importlib\n"
        "    importlib.import_module('nodes.x')\n")
    assert [mod for _p, _l, mod in _imports("pkg", tmp_path)] == ["os", "channels", "importlib", "nodes.x"]


def test_the_core_names_no_capability_package() -> None:
    """A capability is reached through ``gateway.composition.capabilities`` (its start),
    ``gateway.composition.services`` (its service, by key) and ``gateway.composition.ports`` (what the core needs of
    it): no module outside the capability packages imports one, except the config model, which takes each capability's
    config section from its ``config`` module."""
    capabilities = list(CAPABILITIES)
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports("gateway")
           if _within(mod, capabilities) and not _within(_module_of(p), capabilities)
           and not (_module_of(p) == "gateway.config.model" and mod.endswith(".config"))]
    assert not bad, "\n".join(bad)


def test_handlers_build_no_queries() -> None:
    """SQL lives in store modules (``gateway/store/`` for the core's tables, each capability's ``store.py``):
    a method module never imports SQLAlchemy."""
    handlers = [p for p in (ROOT / "gateway").rglob("*.py")
                if p.parent.name == "methods" or p.name == "methods.py"]
    assert len(handlers) > 20
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports("gateway")
           if p in handlers and _top(mod) == "sqlalchemy"]
    assert not bad, "\n".join(bad)


SERVER_SURFACE = {"gateway/methods/health.py", "gateway/methods/host.py", "gateway/methods/restart.py"}
"""The method modules about the server itself (health, status, presence, host facts, restart): the only handlers
that use ``ctx.server`` (``gateway.dispatch.context.ServerControl``)."""

KNOWS_THE_GATEWAY = {"gateway/composition/gateway.py", "gateway/composition/wiring.py", "gateway/server/app.py",
                     "gateway/server/rpc_serve.py", "gateway/server/serve.py"}
"""The composition root and the server that runs it: the only modules that name the whole ``Gateway``."""


def test_only_the_servers_own_methods_reach_the_server() -> None:
    """A handler gets what it uses from ``CallContext``'s members (``ctx.sessions``, ``ctx.call``...), so what it
    depends on shows; ``ctx.server`` is for the server's own surface."""
    bad = []
    for package in ("gateway", *PLATFORM_PACKAGES):
        for path in (ROOT / package).rglob("*.py"):
            rel = str(path.relative_to(ROOT))
            if rel in SERVER_SURFACE or rel == "gateway/dispatch/context.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                if (isinstance(node, ast.Attribute) and node.attr in ("server", "gateway")
                        and isinstance(node.value, ast.Name) and node.value.id == "ctx"):
                    bad.append(f"{rel}:{node.lineno}")
    assert not bad, "ctx.server outside the server's own methods: " + ", ".join(bad)


def test_no_host_or_handler_context_holds_the_gateway() -> None:
    """The hosts and the handlers' context are records of the parts they hand out, built by the composition root
    (``gateway.composition.wiring``): no module outside it and the server names ``Gateway``, not even for a
    type, so no package is handed the whole gateway."""
    bad = [f"{p.relative_to(ROOT)}:{line}" for package in ("gateway", *PLATFORM_PACKAGES)
           for p, line, mod in _imports(package)
           if mod == "gateway.composition.gateway" and str(p.relative_to(ROOT)) not in KNOWS_THE_GATEWAY]
    assert not bad, "modules naming the whole Gateway: " + ", ".join(bad)


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


COMPOSITION_ROOT = {
    "gateway.composition.gateway",  # the Gateway itself
    "gateway.composition.wiring",  # builds every core service with what it uses
    "gateway.composition.hosts", "gateway.platforms.host",  # what a capability / a platform package is shown of it
    "gateway.dispatch.dispatcher",  # a handler's context (its typed services come from the gateway)
    "gateway.server.app", "gateway.server.rpc_serve", "gateway.server.serve",  # the HTTP app, one RPC socket served,
    # and the serve loop, around one gateway
}


def test_only_the_composition_root_imports_gateway() -> None:
    """Services get what they use through their constructors: no other module names ``Gateway``, even for a type
    hint (which is how the old service locator spread)."""
    bad = [f"{p.relative_to(ROOT)}:{line}" for p, line, mod, name in _names("gateway")
           if mod == "gateway.composition.gateway" and name == "Gateway" and _module_of(p) not in COMPOSITION_ROOT]
    assert not bad, ("build the service in gateway/composition/wiring.py with the collaborators it uses:\n"
                     + "\n".join(bad))


MAX_IMPORT_CIRCLE = 6


def test_the_largest_import_circle_is_the_composition_root() -> None:
    """Modules that import each other (type-only imports included) form one tangle to read and to change; the
    largest such circle is the composition root, at most a handful of files."""
    graph = _import_graph("gateway")
    largest = max(_circles(graph), key=len)
    assert len(largest) <= MAX_IMPORT_CIRCLE and set(largest) <= COMPOSITION_ROOT | {"gateway.platforms"}, \
        sorted(largest)


PACKAGES = ("gateway", *PLATFORM_PACKAGES, "mcp_shim", "migrations")
"""Every package the project installs (``pyproject.toml``, ``[tool.setuptools.packages.find]``)."""


@pytest.mark.parametrize("package", PACKAGES)
def test_no_other_modules_import_each_other(package: str) -> None:
    """Outside the gateway's composition root no two modules import each other, even for a type: where one needs a
    little of the other (the chat side of approvals its service, the plugin API its manager, the send budget a
    connection, a browser action its control server), it names what it needs as a small protocol of its own, or the
    piece both use moves to a module of its own (``nodes/errors.py``, ``nodes/browser/tab.py``)."""
    allowed = COMPOSITION_ROOT | {"gateway.platforms"}
    circles = [sorted(c) for c in _circles(_import_graph(package)) if len(c) > 1 and not set(c) <= allowed]
    assert not circles, circles


def test_every_package_is_checked() -> None:
    """A package added to the project is added to ``PACKAGES`` too, or its circles go unseen."""
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {pattern.rstrip("*") for pattern in include} == set(PACKAGES)


def _names(package: str) -> Iterator[tuple[Path, int, str, str]]:
    """(file, line, module, name) for every ``from module import name``."""
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    yield path, node.lineno, node.module, alias.name


def _import_graph(package: str) -> dict[str, set[str]]:
    modules = {_module_of(p) for p in (ROOT / package).rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for path, _line, mod in _imports(package):
        target = known(mod)
        if target is not None and target != _module_of(path):
            graph[_module_of(path)].add(target)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                circle = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    circle.append(top)
                    if top == node:
                        break
                out.append(circle)
    return out


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert sorted(sorted(c) for c in _circles(graph)) == [["a", "b", "c"], ["d"], ["e"]]
