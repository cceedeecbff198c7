"""Canvas: the A2UI host page served to nodes, and the checks applied to what agents push to it."""
