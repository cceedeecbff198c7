"""Audio conversions with PyAV (FFmpeg's codecs in a wheel, libopus included): no ffmpeg binary needed.

Every provider's audio (MP3, WAV, OGG...) becomes **OGG/Opus, mono, 48 kHz**: what Telegram shows as a
voice note (the round bubble of ``sendVoice``), what Discord plays inline, and what Chromium plays in the web
chat. For speech to text, audio is decoded to 16 kHz mono 16-bit PCM, what the recognisers take.

PyAV (the ``tts`` extra) is imported by the functions that use it, not with this module: an install
without the extra starts, and its voice methods answer ``MissingExtra`` instead.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import av

__all__ = ["Encoded", "duration_s", "to_ogg_opus", "to_pcm16"]

OPUS_RATE = 48_000
OPUS_BITRATE = 32_000  # speech: 24-32 kb/s is what voice-note apps use


@dataclass(frozen=True, slots=True)
class Encoded:
    data: bytes
    duration_s: float
    container: str = "ogg"
    codec: str = "opus"
    mime: str = "audio/ogg"


def _av() -> ModuleType:
    """PyAV, imported on first use (``ImportError`` without the ``tts`` extra)."""
    import av
    import av.audio.resampler

    return av


def _input(data: bytes) -> av.container.InputContainer:
    av = _av()
    try:
        return av.open(io.BytesIO(data), mode="r")
    except av.error.FFmpegError as exc:
        raise ValueError(f"not audio FFmpeg can read: {exc}") from None


def to_ogg_opus(data: bytes) -> Encoded:
    """Any audio FFmpeg reads -> OGG/Opus voice-note bytes and their duration (blocking: run in a thread)."""
    av = _av()
    out_buf = io.BytesIO()
    samples = 0
    with _input(data) as source:
        if not source.streams.audio:
            raise ValueError("the data holds no audio stream")
        with av.open(out_buf, mode="w", format="ogg") as sink:
            stream = sink.add_stream("libopus", rate=OPUS_RATE)
            stream.bit_rate = OPUS_BITRATE
            stream.layout = "mono"
            resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=OPUS_RATE)
            for frame in source.decode(audio=0):
                for converted in resampler.resample(frame):
                    samples += converted.samples
                    sink.mux(stream.encode(converted))
            for converted in resampler.resample(None):
                samples += converted.samples
                sink.mux(stream.encode(converted))
            sink.mux(stream.encode(None))
    if samples == 0:
        raise ValueError("the audio is empty")
    return Encoded(out_buf.getvalue(), samples / OPUS_RATE)


def to_pcm16(data: bytes, rate: int = 16_000, max_seconds: float | None = None) -> bytes:
    """Any audio -> mono signed 16-bit little-endian PCM at ``rate`` (blocking)."""
    av = _av()
    chunks: list[bytes] = []
    limit = int(max_seconds * rate * 2) if max_seconds else None
    size = 0
    with _input(data) as source:
        if not source.streams.audio:
            raise ValueError("the data holds no audio stream")
        resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=rate)
        for frame in source.decode(audio=0):
            for converted in resampler.resample(frame):
                chunk = bytes(converted.planes[0])[: converted.samples * 2]
                chunks.append(chunk)
                size += len(chunk)
                if limit is not None and size > limit:
                    raise ValueError(f"the audio is longer than {max_seconds:g} s")
        for converted in resampler.resample(None):
            chunks.append(bytes(converted.planes[0])[: converted.samples * 2])
    return b"".join(chunks)


def duration_s(data: bytes) -> float:
    """The playing time of encoded audio, from its decoded samples (container headers can lie)."""
    total = 0.0
    with _input(data) as source:
        for frame in source.decode(audio=0):
            total += frame.samples / (frame.sample_rate or 1)
    return total
