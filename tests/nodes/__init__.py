"""Nodes: the node host and the node service of the gateway, as real processes."""
