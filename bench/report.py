"""What every benchmark script shares so ``bench/run_all.py`` can drive them alike: ``--quick``, ``--json PATH``.

Each script keeps its own options and its default sizes; ``options`` adds the two common ones, ``parse``
applies the script's smallest sizes under ``--quick`` (an option given explicitly still wins), and ``write``
stores the figures the script already computed as JSON, so the runner reads numbers instead of scraping text.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

__all__ = ["latency", "options", "parse", "write"]


def options(parser: argparse.ArgumentParser, quick: dict[str, Any] | None = None, *, json_flag: bool = True) -> None:
    """Add ``--quick`` (when the script has small sizes to offer) and ``--json PATH``."""
    if quick is not None:
        sizes = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in quick.items())
        parser.add_argument("--quick", action="store_true", help=f"smallest sizes, a smoke run ({sizes})")
        parser.set_defaults(_quick_sizes=quick)
    if json_flag:
        parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse; under ``--quick`` set the small sizes of the options not given on the command line."""
    args = parser.parse_args(argv)
    quick: dict[str, Any] = getattr(args, "_quick_sizes", {}) or {}
    if getattr(args, "quick", False):
        given = list(argv if argv is not None else sys.argv[1:])
        for dest, value in quick.items():
            flag = "--" + dest.replace("_", "-")
            if not any(a == flag or a.startswith(flag + "=") for a in given):
                setattr(args, dest, value)
    return args


def latency(samples_ms: Sequence[float]) -> dict[str, Any]:
    """p50 / p99 / count of millisecond samples, as the scripts report them."""
    ordered = sorted(samples_ms)
    if not ordered:
        return {"p50_ms": None, "p99_ms": None, "n": 0}
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p99_ms": round(p99, 2), "n": len(ordered)}


def write(path: Path | None, figures: Any) -> None:
    """Write ``figures`` as JSON to ``path`` (nothing when no path was asked for)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
