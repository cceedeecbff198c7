"""The WhatsApp channel plugin (extra ``whatsapp``): see ``plugin.py`` and docs/channels/whatsapp.md."""
