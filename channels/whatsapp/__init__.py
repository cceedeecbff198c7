"""WhatsApp: a number of the WhatsApp Business Cloud API (plain HTTPS: httpx), with Meta's webhook."""

from __future__ import annotations

from channels.kind import ChannelKind

__all__ = ["KIND"]

KIND = ChannelKind("whatsapp", "channels.whatsapp.channel:WhatsAppChannel")
