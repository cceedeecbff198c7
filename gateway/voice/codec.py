"""Audio conversions with PyAV (FFmpeg's codecs in a wheel, libopus included): no ffmpeg binary needed.

Every provider's audio (MP3, WAV, OGG...) is re-encoded for where it goes (``FORMATS``):

- ``ogg-opus``: OGG/Opus, mono, 48 kHz: what Telegram shows as a voice note (the round bubble of
  ``sendVoice``) and what Discord plays inline as a voice message. The default.
- ``mp3``: MP3, mono, 24 kHz, 48 kb/s: for the web chat, because it must play in every browser, and Safari
  (macOS and iOS) does not reliably play OGG/Opus in an ``<audio>`` element while every browser plays MP3.

For speech to text, audio is decoded to 16 kHz mono 16-bit PCM, what the recognisers take.

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

__all__ = ["FORMATS", "AudioFormat", "Encoded", "duration_s", "encode", "to_ogg_opus", "to_pcm16"]

OPUS_RATE = 48_000
OPUS_BITRATE = 32_000  # speech: 24-32 kb/s is what voice-note apps use


@dataclass(frozen=True, slots=True)
class AudioFormat:
    """One output format: the FFmpeg container and encoder, and what a receiver is told."""

    name: str
    container: str
    encoder: str
    codec: str
    mime: str
    extension: str
    rate: int
    bit_rate: int
    voice_note: bool
    """Telegram/Discord show it as a voice message (only OGG/Opus)."""


FORMATS: dict[str, AudioFormat] = {
    "ogg-opus": AudioFormat("ogg-opus", "ogg", "libopus", "opus", "audio/ogg", "ogg", OPUS_RATE, OPUS_BITRATE, True),
    "mp3": AudioFormat("mp3", "mp3", "libmp3lame", "mp3", "audio/mpeg", "mp3", 24_000, 48_000, False),
}


@dataclass(frozen=True, slots=True)
class Encoded:
    data: bytes
    duration_s: float
    format: AudioFormat = FORMATS["ogg-opus"]


def _av() -> ModuleType:
    """PyAV, imported on first use (``ImportError`` without the ``tts`` extra)."""
    import av
    import av.audio.resampler
    import av.audio.stream

    return av


def _input(data: bytes) -> av.container.InputContainer:
    av = _av()
    try:
        return av.open(io.BytesIO(data), mode="r")
    except av.error.FFmpegError as exc:
        raise ValueError(f"not audio FFmpeg can read: {exc}") from None


def to_ogg_opus(data: bytes) -> Encoded:
    """Any audio FFmpeg reads -> OGG/Opus voice-note bytes and their duration (blocking: run in a thread)."""
    return encode(data, FORMATS["ogg-opus"])


def encode(data: bytes, fmt: AudioFormat) -> Encoded:
    """Any audio FFmpeg reads -> mono ``fmt`` bytes and their duration (blocking: run in a thread)."""
    av = _av()
    out_buf = io.BytesIO()
    samples = 0
    with _input(data) as source:
        if not source.streams.audio:
            raise ValueError("the data holds no audio stream")
        with av.open(out_buf, mode="w", format=fmt.container) as sink:
            stream = sink.add_stream(fmt.encoder, rate=fmt.rate)
            assert isinstance(stream, av.audio.stream.AudioStream)  # an audio encoder gives an audio stream
            stream.bit_rate = fmt.bit_rate
            stream.layout = "mono"
            sample_fmt = "s16" if fmt.encoder == "libopus" else "s16p"  # what each encoder takes
            resampler = av.audio.resampler.AudioResampler(format=sample_fmt, layout="mono", rate=fmt.rate)
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
    return Encoded(out_buf.getvalue(), samples / fmt.rate, fmt)


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
