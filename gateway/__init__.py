"""remoteclaw gateway: the central asyncio service."""

__version__ = "0.1.0"
