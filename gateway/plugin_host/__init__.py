"""The plugin host (the plugins themselves are the top-level ``plugins`` package, or any installed one):
Python packages and folders that add tools, gateway methods, HTTP routes, hooks, background
services and channels to a running gateway.

- ``manifest``: ``remoteclaw.plugin.json`` (id, name, version, description, configSchema).
- ``discovery``: the ``remoteclaw.plugins`` entry points and the folders in ``plugins.load.paths``.
- ``api``: ``PluginApi``, what ``register(api)`` uses to add things.
- ``hooks``: the hook names, and running them (observers in the background, deciders in order).
- ``service``: the manager (load, unload, reconcile with config) and the plugin tool calls.
- ``methods``: ``plugins.list``, ``plugins.setEnabled``, ``plugin.tools.list``, ``plugin.tools.invoke``.
- ``config``: the ``plugins`` config section.

A plugin author imports ``PluginApi``, ``ToolContext``, ``ToolFailed``, ``text``, ``image``, ``whose_for`` (whom a
method's caller is, as ``ToolContext.whose``) and ``Database``
(the type of ``api.db``) from here, and nothing else of the gateway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.composition.capabilities import Capability

__all__ = ["Database", "PluginApi", "ToolContext", "ToolFailed", "image", "text", "whose_for"]

if TYPE_CHECKING:
    from gateway.plugin_host.api import PluginApi, ToolContext, image, text, whose_for
    from gateway.plugin_host.manager import ToolFailed
    from gateway.store import Database


def __getattr__(name: str) -> Any:
    # Lazy: ``gateway.config`` imports ``gateway.plugin_host.config``, which must not pull in the manager.
    if name in ("PluginApi", "ToolContext", "image", "text", "whose_for"):
        from gateway.plugin_host import api

        return getattr(api, name)
    if name == "Database":  # what ``api.db`` is (its type, for a plugin's annotations)
        from gateway.store import Database

        return Database
    if name == "ToolFailed":
        from gateway.plugin_host.manager import ToolFailed

        return ToolFailed
    raise AttributeError(name)

CAPABILITY = Capability(
    "plugins",
    start="gateway.plugin_host.manager:start",
    methods=("gateway.plugin_host.methods",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
