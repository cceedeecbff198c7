"""The example plugin (see ``plugin.py`` and docs/plugins.md)."""
