"""Test support: real gateway processes on free loopback ports, and raw protocol clients."""
