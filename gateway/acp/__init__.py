"""``remoteclaw acp``: the gateway's sessions as an Agent Client Protocol agent on stdio, for editors (Zed…).

``server`` is the agent (built on the SDK's agent side, ``agent-client-protocol``), ``events`` the pure mapping of
gateway run events to what the editor is sent, ``cli`` the command. The other direction, any ACP agent as a
runtime of the gateway, is ``gateway.agents.runtimes.acp``.
"""
