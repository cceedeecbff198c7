"""The built-in memory plugin: long-term memory for agents (see ``plugin.py`` and docs/plugins.md)."""

from plugins.memory.plugin import register

__all__ = ["register"]
