"""The built-in memory plugin: long-term memory for agents (``plugin.py``; docs/plugins.md).

Nothing is imported here: ``remoteclaw memory`` (``cli.py``) loads with every extension command of the
CLI, and must not pay for the store's SQLAlchemy and the plugin API.
"""
