"""Where plugins come from: the ``remoteclaw.plugins`` entry points of the installed distributions, and
folders named in ``plugins.load.paths``.

Finding a plugin reads only its manifest; its code is imported when it is enabled and loads. So a
disabled or denied plugin costs nothing, and ``plugins.list`` still shows what it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from gateway.plugin_host.manifest import MANIFEST_FILE, ManifestError, PluginManifest, parse_manifest

__all__ = ["ENTRY_POINT_GROUP", "Candidate", "discover"]

ENTRY_POINT_GROUP = "remoteclaw.plugins"
DISTRIBUTION = "remoteclaw"
"""Our own distribution: the plugins it declares are the bundled ones."""

Register = Callable[[Any], Any]


@dataclass(slots=True)
class Candidate:
    """A plugin found somewhere: its manifest (or why there is none) and how to get its ``register``."""

    source: str
    """``entry-point:<name>`` or ``path:<folder>``."""
    id: str
    manifest: PluginManifest | None
    error: str | None
    load_register: Callable[[], Register]
    default_enabled: bool = True
    bundled: bool = False
    """Shipped with remoteclaw (an entry point of its own distribution): its schemas are checked by the test
    suite, not at every start (``gateway.plugin_host.schemas``)."""


def _read_manifest(path: Path, *, bundled: bool = False) -> PluginManifest:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ManifestError(f"{path} is not valid JSON: {exc}") from None
    return parse_manifest(data, str(path), bundled=bundled)


def _register_of(obj: Any, where: str) -> Register:
    register = getattr(obj, "register", None)
    if not callable(register):
        raise ManifestError(f"{where} has no register(api) function")
    return register  # type: ignore[no-any-return]


def _import_ref(ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def _from_entry_point(name: str, ref: str, *, bundled: bool = False) -> Candidate:
    source = f"entry-point:{name}"
    module_name = ref.partition(":")[0]

    def load() -> Register:
        return _register_of(_import_ref(ref), ref)

    try:
        spec = importlib.util.find_spec(module_name)
        origin = Path(spec.origin) if spec and spec.origin else None
        manifest_path = origin.parent / MANIFEST_FILE if origin else None
        if manifest_path and manifest_path.is_file():
            manifest = _read_manifest(manifest_path, bundled=bundled)
        else:  # no manifest file: the object carries a ``manifest`` dict (this imports its code)
            manifest = parse_manifest(getattr(_import_ref(ref), "manifest", None), f"{ref} (manifest attribute)",
                                      bundled=bundled)
        if manifest.id != name:
            raise ManifestError(f"entry point {name!r} loads a plugin whose manifest id is {manifest.id!r}")
    except Exception as exc:  # ManifestError, ImportError, anything its import raised
        return Candidate(source, name, None, str(exc) if isinstance(exc, ManifestError)
                         else f"{type(exc).__name__}: {exc}", load, bundled=bundled)
    return Candidate(source, name, manifest, None, load, manifest.enabledByDefault, bundled)


def _folder_module(manifest: PluginManifest, folder: Path) -> ModuleType:
    """Import a folder plugin's ``main`` file afresh (a re-enable picks up edits), as a package so it can
    import its sibling modules relatively."""
    main = (folder / manifest.main).resolve()
    if not main.is_file() or folder.resolve() not in main.parents:
        raise ManifestError(f"{folder}: main file {manifest.main!r} not found in the plugin folder")
    package = f"remoteclaw_plugin_{manifest.id.replace('-', '_')}"
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    pkg_spec = importlib.util.spec_from_file_location(package, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
    if pkg_spec is None:
        raise ManifestError(f"{folder}: cannot be imported")
    pkg = importlib.util.module_from_spec(pkg_spec)
    sys.modules[package] = pkg
    if (folder / "__init__.py").is_file() and pkg_spec.loader:
        pkg_spec.loader.exec_module(pkg)
    module_name = f"{package}.{main.stem}"
    spec = importlib.util.spec_from_file_location(module_name, main)
    if spec is None or spec.loader is None:
        raise ManifestError(f"{main}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _from_folder(folder: Path) -> Candidate:
    source = f"path:{folder}"
    try:
        manifest = _read_manifest(folder / MANIFEST_FILE)
    except ManifestError as exc:
        return Candidate(source, folder.name, None, str(exc), lambda: _register_of(None, source))

    def load() -> Register:
        return _register_of(_folder_module(manifest, folder), str(folder / manifest.main))

    return Candidate(source, manifest.id, manifest, None, load, default_enabled=True)


def _folders(paths: list[str], base: Path) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else base / path
        if (path / MANIFEST_FILE).is_file() or not path.is_dir():
            out.append(path)
        else:  # a folder of plugin folders
            out.extend(sorted(p for p in path.iterdir() if (p / MANIFEST_FILE).is_file()))
    return out


def discover(paths: list[str], base: Path) -> list[Candidate]:
    """Every plugin found, entry points first (sorted by name), then folders in config order. Relative
    paths are taken from ``base`` (the config file's folder)."""
    found = [_from_entry_point(ep.name, ep.value, bundled=ep.dist is not None and ep.dist.name == DISTRIBUTION)
             for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)]
    found += [_from_folder(folder) for folder in _folders(paths, base)]
    return found
