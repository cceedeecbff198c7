"""Plugin hooks: the named moments plugins observe or decide (``runner``: ``HOOKS``, ``HookRunner``), and the
shim's tool hooks and heartbeat reports (``methods``: ``hooks.tool.before``/``after``, ``heartbeat.report``)."""
