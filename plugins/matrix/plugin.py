"""The ``matrix`` plugin: adds the Matrix chat channel, configured under ``channels.matrix``.

The channel type is registered by name (``module:Class``), so matrix-nio is imported only when a Matrix
account is configured; without the ``matrix`` extra the channel's status names the extra to install.
"""

from __future__ import annotations

from gateway.plugin_host import PluginApi


def register(api: PluginApi) -> None:
    api.channel("matrix", "plugins.matrix.channel:MatrixChannel")
