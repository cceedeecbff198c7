"""docs/protocol.md's method table and gateway/protocol/openclaw_fields.json are what scripts/protocol-table makes of
OpenClaw's schema and our registry: rerun it after adding a method or changing a params model."""

from __future__ import annotations

import orjson
import pytest

from gateway.dispatch.dispatcher import registry
from gateway.methods import load_all
from gateway.protocol import method_table
from tests.support.openclaw_schema import schema_or_none


@pytest.fixture(scope="module")
def schema() -> object:
    found = schema_or_none()
    if found is None:
        pytest.skip("OpenClaw's protocol schema is not installed (scripts/install-openclaw-protocol)")
    return found


def test_generated_files_are_up_to_date(schema: object) -> None:
    assert method_table.main(["--check"]) == 0, "run scripts/protocol-table"


def test_the_table_places_methods_by_what_we_do(schema: object) -> None:
    load_all()
    table = method_table.render_table(schema, registry)  # type: ignore[arg-type]
    row = next(line for line in table.splitlines() if line.startswith("| `cron` |"))
    cells = row.split("|")
    assert "`cron.status`" in cells[3] and "`cron.list`" in cells[4] and "`cron.scratch.get`" in cells[5]
    ignored = next(line for line in table.splitlines() if line.startswith("| `sessions.list` |"))
    assert "`configuredAgentsOnly`" in ignored and "`search`" not in ignored  # search is ours: implemented
    fields = orjson.loads(method_table.FIELDS_PATH.read_bytes())["methods"]
    assert fields["sessions.list"]["archived"] == {"anyOf": [{"type": "boolean"}, {"type": "string", "const": "all"}]}
    assert "cron.add" in fields and "name" not in fields["cron.add"]  # cron.add's own fields are read by jobs.py
