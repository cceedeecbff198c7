"""The ``plugins`` config section: which plugins run, and each one's own settings.

A plugin's ``config`` is free-form here; it is checked against the JSON Schema in the plugin's manifest
when the plugin loads and whenever the config changes (``gateway.plugin_host.manager``), so an error names the
path inside ``plugins.entries.<id>.config``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.config.sections import Section

__all__ = ["PluginEntryConfig", "PluginLoadConfig", "PluginsConfig"]


class PluginEntryConfig(Section):
    """One plugin's switch and settings."""

    enabled: bool | None = Field(None, description="On or off; unset: the plugin's own default (its manifest's "
                                                    "enabledByDefault, on for folders listed in load.paths).")
    config: dict[str, Any] = Field(default_factory=dict, description="Settings, checked against the plugin's "
                                                                     "configSchema.")


class PluginLoadConfig(Section):
    paths: list[str] = Field(default_factory=list, description="Folders holding a plugin (remoteclaw.plugin.json "
                                                                "beside its code), or folders of such folders.")


class PluginsConfig(Section):
    """Plugins: Python packages found through the ``remoteclaw.plugins`` entry points, and folders."""

    enabled: bool = Field(True, description="Off: no plugin is loaded at all.")
    allow: list[str] = Field(default_factory=list, description="When set, only these plugin ids may load.")
    deny: list[str] = Field(default_factory=list, description="These plugin ids never load (wins over allow).")
    load: PluginLoadConfig = PluginLoadConfig()
    entries: dict[str, PluginEntryConfig] = Field(default_factory=dict, description="Plugin id -> its settings.")
