"""Voice benchmark: time to first audio per TTS provider, and the offline speech-to-text's speed and accuracy.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/voice_bench.py            # ~1 min

1. **Time to audio** for a 200-character reply, per provider, through the gateway's voice service in this
   process (synthesis + OGG/Opus encoding + writing the file): ``local`` (espeak-ng) for real; ``openai`` and
   ``elevenlabs`` through their SDKs against the loopback fake (so only our overhead and the SDK's);
   ``edge`` needs Microsoft's service and is skipped when offline.
2. **Local STT**: sentences spoken by espeak-ng and transcribed by PocketSphinx; the real-time factor
   (transcription time / audio length) and the word error rate against the text that was spoken.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from gateway.config.model import Config  # noqa: E402
from gateway.voice import stt  # noqa: E402
from gateway.voice.config import SttConfig, TtsConfig  # noqa: E402
from gateway.voice.providers import make_provider  # noqa: E402
from gateway.voice.service import VoiceService  # noqa: E402
from tests.support.fake_voice import FakeVoiceAPI  # noqa: E402

REPLY = ("Your build finished in four minutes. All three hundred tests passed, the linter is clean, and the "
         "deploy to staging is waiting for your approval. Want me to go ahead with production as well?")[:200]
SENTENCES = ["open the window please", "the meeting starts at nine tomorrow", "send the report to my manager",
             "what is the weather like today", "turn off the lights in the kitchen", "call me when you arrive",
             "the build failed on the main branch", "please remind me to buy milk"]


class _DB:
    """Stands in for the database: the service reads the owner's preferences from it (none here)."""

    def session(self) -> Any:
        raise RuntimeError("not used")


def service(tts: TtsConfig, state: Path) -> VoiceService:
    config = Config(messages={"tts": tts.model_dump(), "stt": {"provider": "local"}})
    store = SimpleNamespace(config=config)  # what the service reads of a ConfigStore
    svc = VoiceService(store, _DB(), state)  # type: ignore[arg-type]

    async def settings() -> tuple[bool, str]:
        return True, tts.provider
    svc.settings = settings  # type: ignore[method-assign]
    return svc


def wer(reference: str, hypothesis: str) -> float:
    ref, hyp = reference.split(), re.sub(r"[^\w ]", "", hypothesis.lower()).split()
    d = [[i + j if i * j == 0 else 0 for j in range(len(hyp) + 1)] for i in range(len(ref) + 1)]
    for i in range(1, len(ref) + 1):
        for j in range(1, len(hyp) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    return d[-1][-1] / len(ref)


async def time_to_audio(svc: VoiceService, runs: int, figures: dict[str, Any] | None = None) -> str:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        speech = await svc.speak(REPLY)
        samples.append((time.perf_counter() - started) * 1000)
    if figures is not None:
        figures.update(p50_ms=round(statistics.median(samples)), max_ms=round(max(samples)))
    return f"p50 {statistics.median(samples):.0f} ms, max {max(samples):.0f} ms ({speech.duration_s:.1f} s of audio)"


async def main(args: argparse.Namespace) -> None:
    figures: dict[str, Any] = {}
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp, FakeVoiceAPI() as api:
        state = Path(tmp)
        fake_keys = {"openai": {"apiKey": "sk-bench", "baseUrl": f"{api.url}/v1"},
                     "elevenlabs": {"apiKey": "el-bench", "baseUrl": api.url}}
        for name in ("local", "openai", "elevenlabs", "edge"):
            tts = TtsConfig(provider=name, **fake_keys)
            ok, why = make_provider(name, tts).configured()
            if name == "edge":
                try:
                    await make_provider("edge", tts).synthesize("hi")
                except Exception as exc:
                    print(f"tts {name:<11} skipped: {str(exc)[:80]}")
                    continue
            figures[f"tts_{name}"] = {}
            print(f"tts {name:<11}", await time_to_audio(service(tts, state), args.runs, figures[f"tts_{name}"])
                  if ok else f"skipped: {why}")

        cfg = SttConfig(provider="local")
        local = service(TtsConfig(provider="local"), state)
        errors, factors = [], []
        for sentence in SENTENCES[:args.sentences]:
            speech = await local.speak(sentence)
            heard = await stt.transcribe(cfg, await asyncio.to_thread(Path(speech.path).read_bytes))
            errors.append(wer(sentence, heard.text))
            factors.append(heard.took_ms / 1000 / heard.duration_s)
            print(f"  said {sentence!r:42} heard {heard.text!r}")
        print(f"stt local   real-time factor {statistics.median(factors):.2f} (median), "
              f"word error rate {statistics.mean(errors) * 100:.0f}% over {len(errors)} sentences")
    figures["stt_local"] = {"real_time_factor": round(statistics.median(factors), 2),
                            "wer_pct": round(statistics.mean(errors) * 100), "sentences": len(errors)}
    report.write(args.json, figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="syntheses per TTS provider (10)")
    parser.add_argument("--sentences", type=int, default=len(SENTENCES), help="sentences for the STT check (all)")
    report.options(parser, {"runs": 2, "sentences": 2})
    asyncio.run(main(report.parse(parser)))
