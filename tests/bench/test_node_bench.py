"""``bench/node_bench.py`` reports the nodes that really connected, never just the number it asked for."""

from __future__ import annotations

from pathlib import Path

from bench.node_bench import many_nodes


async def test_memory_line_names_the_nodes_that_connected(tmp_path: Path) -> None:
    # Without loopback auto-approval the helper's nodes stay pending: sockets open, none paired, none counted.
    line = await many_nodes(tmp_path, 2, wait_s=4, auto_approve=False)
    assert line.startswith("0 of 2 nodes connected"), line
    assert "per node" not in line  # no per-node figure made from nodes that never connected


async def test_memory_line_when_every_node_connected(tmp_path: Path) -> None:
    line = await many_nodes(tmp_path, 2, wait_s=60)
    assert line.startswith("2 nodes connected: gateway RSS"), line
