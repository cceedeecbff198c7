"""The packages depend one way: the gateway names no module of ``channels/``, ``nodes/`` or ``plugins/``;
those (and the MCP shim) use only the gateway's public surface. Read from the source, so a lazy import
inside a function counts as much as one at the top of a module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

PLATFORM_PACKAGES = ("channels", "nodes", "plugins")
GATEWAY_PUBLIC = {
    # what a platform package may import from the gateway (docs/architecture.md, "Dependencies")
    "gateway.protocol",  # frames and the error family
    "gateway.platforms",  # the messages, the ChatPlatforms interface, PlatformHost, config models
    "gateway.extensions",  # the registries it adds channel types or runtimes to
    "gateway.extras",  # which pip extra brings a library, and the error naming it
    "gateway.cli",  # call_gateway(), for CLI sub-commands that are clients of a running gateway
    "gateway.plugins",  # the plugin API: PluginApi, ToolContext, ToolFailed, text(), image(), Database
}
SHIM_ALLOWED = {"gateway.protocol", "gateway.__version__"}


def _imports(package: str, root: Path = ROOT) -> Iterator[tuple[Path, int, str]]:
    """(file, line, imported module) for every import in a package, wherever it stands."""
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, node.lineno, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # "from gateway import config" imports gateway.config
                    yield path, node.lineno, f"{node.module}.{alias.name}"
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) ==
                  "import_module" and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)):
                yield path, node.lineno, node.args[0].value


def _top(module: str) -> str:
    return module.split(".")[0]


def test_the_gateway_imports_no_platform_package() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports("gateway")
           if _top(mod) in PLATFORM_PACKAGES]
    assert not bad, "the gateway must find these through gateway.extensions instead:\n" + "\n".join(bad)


@pytest.mark.parametrize("package", [*PLATFORM_PACKAGES])
def test_platform_packages_use_only_the_gateways_public_surface(package: str) -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports(package)
           if _top(mod) == "gateway" and not any(mod == m or mod.startswith(m + ".") for m in GATEWAY_PUBLIC)]
    assert not bad, "\n".join(bad)


def test_the_shim_imports_only_the_protocol_from_the_gateway() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p, line, mod in _imports("mcp_shim")
           if _top(mod) == "gateway" and not any(mod == m or mod.startswith(m + ".") for m in SHIM_ALLOWED)]
    assert not bad, "\n".join(bad)


def test_the_check_sees_lazy_imports(tmp_path: Path) -> None:
    """The scan is only worth something if an import inside a function is caught too."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "import os\n\ndef f():\n    from channels import manager\n    import importlib\n"
        "    importlib.import_module('nodes.x')\n")
    assert [mod for _p, _l, mod in _imports("pkg", tmp_path)] == ["os", "channels.manager", "importlib", "nodes.x"]
