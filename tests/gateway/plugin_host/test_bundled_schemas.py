"""The bundled plugins' JSON Schemas are checked here rather than at every start (``gateway.plugin_host.schemas``):
each manifest's ``configSchema`` is valid and takes ``{}`` (they load with no settings), every schema their
tools and methods register is valid, and finding and registering them imports no ``jsonschema``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gateway.config import ConfigStore
from gateway.plugin_host.api import PluginApi
from gateway.plugin_host.discovery import Candidate, discover
from gateway.plugin_host.manifest import parse_manifest
from gateway.plugin_host.schemas import SchemaValidator, schema_error
from gateway.store import Database
from tests.support import ROOT


class _Loader:
    """What registering needs of the manager: the config, the database, the state folder (none is used yet)."""

    def __init__(self, state: Path) -> None:
        self.config_store = ConfigStore(state / "remoteclaw.json")
        self.db = Database(f"sqlite+aiosqlite:///{state / 'state.db'}")
        self.state_dir = state

    async def call_as_plugin(self, plugin_id: str, method: str, params: dict[str, Any] | None) -> Any:
        raise AssertionError("registering calls no method")


def _bundled() -> list[Candidate]:
    found = [c for c in discover([], ROOT) if c.bundled]
    assert {c.id for c in found} == {"example", "memory"}
    return found


def test_every_schema_of_a_bundled_plugin_is_valid(tmp_path: Path) -> None:
    for cand in _bundled():
        assert cand.manifest is not None, cand.error
        parse_manifest(cand.manifest.model_dump(), cand.id)  # the check a plugin from elsewhere gets
        assert SchemaValidator(cand.manifest.configSchema).problem({}) is None, cand.id
        api = PluginApi(_Loader(tmp_path), cand.manifest, {}, bundled=False)  # checks each schema it is given
        cand.load_register()(api)
        schemas = [t.input_schema for t in api.registration.tools]
        schemas += [t.output_schema for t in api.registration.tools if t.output_schema is not None]
        schemas += [m.params_schema for m in api.registration.methods if m.params_schema is not None]
        assert schemas and all(schema_error(s) is None for s in schemas), cand.id


def test_a_schema_from_elsewhere_is_still_checked(tmp_path: Path) -> None:
    [memory] = [c for c in _bundled() if c.id == "memory"]
    assert memory.manifest is not None
    api = PluginApi(_Loader(tmp_path), memory.manifest, {})
    try:
        api.tool("bad", "A tool with a broken schema.", {"type": "object", "properties": {"x": {"type": 5}}},
                 lambda p, ctx: None)
    except ValueError as exc:
        assert "tool bad: inputSchema is not a valid JSON Schema" in str(exc)
    else:
        raise AssertionError("an invalid schema was accepted")
    assert SchemaValidator({"type": "object", "required": ["a"]}).problem({}) == "at /: 'a' is a required property"


PROBE = """
import json, sys
from pathlib import Path
from gateway.config import ConfigStore
from gateway.plugin_host.api import PluginApi
from gateway.plugin_host.discovery import discover
from gateway.store import Database

class Loader:
    config_store = ConfigStore(Path(sys.argv[1]) / "remoteclaw.json")
    db = Database(f"sqlite+aiosqlite:///{sys.argv[1]}/state.db")
    state_dir = Path(sys.argv[1])

for cand in discover([], Path(".")):
    if cand.bundled:
        cand.load_register()(PluginApi(Loader(), cand.manifest, {}, bundled=True))
print(json.dumps("jsonschema" in sys.modules))
"""


def test_finding_and_registering_the_bundled_plugins_imports_no_jsonschema(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) is False
