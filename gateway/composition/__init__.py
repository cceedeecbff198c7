"""The composition root: the ``Gateway`` of one server start (``gateway``), where its services are built with what
they use (``wiring``), the capability list (``capabilities``), the hosts a capability or a platform package is
shown (``hosts``), the capabilities' services by key (``services``) and what the core needs of them (``ports``),
the callables a service is given instead of the gateway (``callable_types``), and the entry-point registries
through which the gateway finds channels, runtimes and CLI sub-commands (``entry_points``)."""
