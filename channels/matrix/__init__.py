"""Matrix: an account on any homeserver through matrix-nio (extra ``matrix``; ``matrix-e2e`` for encrypted rooms)."""

from __future__ import annotations

from channels.kind import ChannelKind

__all__ = ["KIND"]

KIND = ChannelKind("matrix", "channels.matrix.channel:MatrixChannel")
