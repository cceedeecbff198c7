"""The node's desktop: Cua Driver's tools as ``desktop.*`` commands, and trajectories (``service.py``)."""
