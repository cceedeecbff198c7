"""A plugin's manifest: who it is and what settings it takes, read before any of its code runs.

It is the file ``remoteclaw.plugin.json`` beside the plugin's code (a folder plugin, or the module an
entry point names), or, for a package that prefers code, a ``manifest`` dict on the entry point's object.
"""

from __future__ import annotations

from typing import Any

# jsonschema is imported only by gateway.plugin_host.schemas, when a check runs (none for the bundled plugins).
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from gateway.plugin_host.schemas import schema_error
from gateway.protocol import describe_validation_error

__all__ = ["MANIFEST_FILE", "ManifestError", "PluginManifest", "parse_manifest"]

MANIFEST_FILE = "remoteclaw.plugin.json"


class ManifestError(Exception):
    """The manifest is missing or invalid; the message says what and where."""


class PluginManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$", description="Stable id: config key, method prefix.")
    name: str = Field(min_length=1, max_length=200)
    version: str = Field("0.0.0", max_length=64)
    description: str = Field("", max_length=2000)
    configSchema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"},
                                         description="JSON Schema of plugins.entries.<id>.config.")
    enabledByDefault: bool = Field(True, description="Whether the plugin runs when config does not say.")
    main: str = Field("plugin.py", description="Folder plugins: the file defining register(api).")

    @field_validator("configSchema")
    @classmethod
    def _is_schema(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if (info.context or {}).get("bundled"):
            return value  # checked by the test suite (gateway.plugin_host.schemas)
        problem = schema_error(value)
        if problem is not None:
            raise ValueError(f"not a valid JSON Schema: {problem}")
        return value


def parse_manifest(data: Any, where: str, *, bundled: bool = False) -> PluginManifest:
    """Validate manifest data read from ``where`` (named in the error); ``bundled``: one of ours, whose
    ``configSchema`` the test suite checks."""
    try:
        return PluginManifest.model_validate(data, context={"bundled": bundled})
    except ValidationError as exc:
        raise ManifestError(f"invalid manifest {where}: {describe_validation_error(exc)}") from None
