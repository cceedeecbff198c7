"""Agent turns on nodes: an agent placed on a paired node (``agents.list[].node``) has its turns run there.

- ``placement``: where an agent's turns go, and why they cannot go there (for the chat, ``doctor``, ``nodes``);
- ``streams``: the turn's output lines as the node sends them (``node.agent.output``), to the replica running the
  turn, each decided by the access model (a node reports about its own turns only);
- ``remote``: the executor's turn carried to the node (``agent.run`` as a node invoke): paths, the shim's and the
  model gateway's addresses as the node reaches them, and the answer back as a process result;
- ``parked``: messages for a node that is offline or dropped mid-turn, run when it is back (or, cut off mid-turn
  where running again is not safe, the chat asked to send them again);
- ``store``: those messages in the database (``node_kept_messages``): a gateway restart keeps them;
- ``files``: the turn's files both ways: the message's attachments sent with ``agent.run``, and a file its agent
  sends back read on the node (``agent.file``), never a path on the gateway's disk.

The node's side is ``nodes/agents`` (what its owner lends, its sandbox).
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "agent_hosts",
    start="gateway.agent_hosts.start:start",
    methods=("gateway.agent_hosts.methods",),
    doctor="gateway.agent_hosts.doctor:rows",
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
