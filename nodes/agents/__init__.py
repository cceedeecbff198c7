"""Agent turns on this node: the agent CLIs and folders its owner lends the gateway (``agent.run``).

``settings`` is what the node's owner decided (``remoteclaw node agents set ...``, kept in the node's state dir);
``runner`` runs one turn the gateway sends: the lent CLI, in the node's own bubblewrap sandbox, its output
streamed back line by line while it runs.
"""
