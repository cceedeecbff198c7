"""Browser control through a node: ``browser.request`` routed to a node that offers ``browser.proxy``."""
