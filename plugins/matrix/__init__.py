"""The Matrix channel plugin (extra ``matrix``): see ``plugin.py`` and docs/channels/matrix.md."""
