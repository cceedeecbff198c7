"""Method dispatch: the registry of ``@method`` declarations (``registry``), who calls and with which scopes
(``callers``), and the ``Dispatcher`` that authorizes, validates, de-duplicates and calls a handler with its
``CallContext`` (``dispatcher``). The handlers themselves are ``gateway.methods`` and each capability's
``methods``."""
