"""A test plugin whose ``register`` raises: it must be listed with its error and skipped."""


def register(api):
    api.tool("broken_tool", "never registered", None, lambda p, ctx: None)
    raise RuntimeError("this plugin is broken on purpose")
