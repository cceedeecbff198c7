"""The ``whatsapp`` plugin: adds the WhatsApp channel (Meta's Cloud API), configured under ``channels.whatsapp``.

The channel type is registered by name (``module:Class``), so its module is imported only when a WhatsApp
account is configured.
"""

from __future__ import annotations

from gateway.plugin_host import PluginApi


def register(api: PluginApi) -> None:
    api.channel("whatsapp", "plugins.whatsapp.channel:WhatsAppChannel")
