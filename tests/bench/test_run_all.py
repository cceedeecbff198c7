"""``bench/run_all.py``: each benchmark a subprocess, medians and same-run ratios, the docs block replaced.

The runs here are real subprocesses of real scripts (``params_bench --quick`` takes a few seconds); a
crash and a missing prerequisite are made with a module that does not exist and a check that fails.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson
import pytest

from bench import report, run_all
from bench.run_all import BEGIN, END, Bench, Outcome, flatten, markdown, run_one, summarise, write_docs


def _args(repeat: int = 1, quick: bool = False) -> argparse.Namespace:
    return run_all.parse_args([f"--repeat={repeat}", *(["--quick"] if quick else [])])


def test_flatten_keeps_numbers_only() -> None:
    assert flatten({"a": {"b": 1, "c": "x", "d": True}, "e": [2.5, None], "f": float("nan")}) == {
        "a/b": 1.0, "e/0": 2.5}


def test_medians_and_ratios_come_from_the_same_run() -> None:
    o = Outcome("gateway", runs=[{"ours": 10, "theirs": 20}, {"ours": 30, "theirs": 30}, {"ours": 12, "theirs": 12}])
    assert o.medians() == {"ours": 12, "theirs": 20}
    # Per-run ratios 0.5, 1.0, 1.0: their median, not 12 / 20.
    assert o.ratio("ours", "theirs") == 1.0


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_all, "RESULTS", tmp_path / "results")  # the logs of these runs are throw-away


def test_a_real_benchmark_runs_repeated(tmp_path: Path) -> None:
    outcome = run_one(Bench("params"), _args(repeat=2, quick=True), "test-" + tmp_path.name)
    assert outcome.failures == [] and len(outcome.runs) == 2
    assert outcome.runs[0]["sessions.list/strict_us"] > 0


def test_crash_and_missing_prerequisite_are_reported_and_the_rest_goes_on() -> None:
    args = _args(quick=True)
    crashed = run_one(Bench("nonexistent"), args, "test-crash")
    assert crashed.runs == [] and "exit 1" in crashed.failures[0]
    skipped = run_one(Bench("params", needs=(lambda: "Frobnicator 3",)), args, "test-skip")
    assert skipped.skipped == "missing Frobnicator 3"
    ran = run_one(Bench("params", optional=((lambda: "a peer", ()),)), args, "test-optional")
    assert ran.runs and ran.notes == ["without a peer"]


def test_docs_block_is_replaced_between_the_markers(tmp_path: Path) -> None:
    bench = next(b for b in run_all.BENCHES if b.name == "gateway")
    o = Outcome("gateway", runs=[{"remoteclaw/start_s": 0.5, "openclaw/start_s": 2.0}])
    mach = {"cpu": "CPU", "cores": 2, "ram_gib": 4, "os": "OS", "kernel": "k", "python": "3.11", "node": "v24",
            "loadavg_start": [1, 1, 1], "loadavg_end": [2, 2, 2]}
    result = summarise([o, Outcome("voice", skipped="missing espeak-ng")], _args(repeat=1), "cmd", mach)
    assert result["benchmarks"][0]["ratios"][0]["ratio"] == 0.25
    block = markdown(result)
    assert "| gateway | gateway start (s) | 0.5 | OpenClaw 2 | 0.25 |" in block, block
    assert "`voice`: skipped, missing espeak-ng" in block
    assert bench.headline[0][1] == "remoteclaw/start_s"
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nintro\n")
    write_docs(block, doc)
    write_docs(block.replace("0.25", "0.3"), doc)  # the second run replaces the first
    text = doc.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1 and "| 0.3 |" in text and text.startswith("# Benchmarks")


def test_quick_sets_small_sizes_but_explicit_options_win() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=100)
    report.options(parser, {"calls": 50, "nodes": 10})
    assert vars(report.parse(parser, [])) | {"_quick_sizes": None} == {
        "calls": 500, "nodes": 100, "quick": False, "json": None, "_quick_sizes": None}
    quick = report.parse(parser, ["--quick", "--calls=7"])
    assert (quick.calls, quick.nodes) == (7, 10)


def test_unknown_names_are_refused() -> None:
    with pytest.raises(SystemExit):
        run_all.parse_args(["--only", "gateway,nope"])


def test_written_json_round_trips(tmp_path: Path) -> None:
    report.write(tmp_path / "x" / "f.json", {"a": {"p50_ms": 1.5}})
    assert orjson.loads((tmp_path / "x" / "f.json").read_bytes()) == {"a": {"p50_ms": 1.5}}
