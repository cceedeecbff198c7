"""Loopback fakes of the voice APIs the gateway's SDKs talk to: OpenAI's ``/v1/audio/speech`` and
``/v1/audio/transcriptions``, and ElevenLabs' ``/v1/text-to-speech/{voice_id}``.

Each request is recorded (its JSON body, or the multipart fields for a transcription) and answered with
real audio (``tone_wav``), a fixed transcript, or the error a test asked for with ``fail``.
"""

from __future__ import annotations

import io
import json
import math
import re
import struct
import subprocess
import wave
from typing import Any

from tests.support.fake_http import FakeHTTPServer, Reply, json_reply

__all__ = ["FakeVoiceAPI", "spoken_note", "tone_wav"]


def tone_wav(seconds: float = 0.6, rate: int = 16_000, hz: float = 440.0) -> bytes:
    """A sine tone as WAV: real audio for the SDKs to carry and PyAV to decode."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", int(12_000 * math.sin(2 * math.pi * hz * i / rate)))
                                 for i in range(int(seconds * rate))))
    return buf.getvalue()



def spoken_note(text: str) -> bytes:
    """A real voice note, as a phone records it: speech (espeak-ng) encoded as OGG/Opus (needs the tts extra)."""
    from gateway.voice import codec

    wav = subprocess.run(["espeak-ng", "--stdout", text], capture_output=True, check=True).stdout
    return codec.to_ogg_opus(wav).data


class FakeVoiceAPI(FakeHTTPServer):
    def __init__(self, transcript: str = "turn on the lights in the kitchen") -> None:
        super().__init__()
        self.audio = tone_wav()
        self.transcript = transcript
        self.speech: list[dict[str, Any]] = []
        self.eleven: list[dict[str, Any]] = []
        self.transcriptions: list[dict[str, Any]] = []
        self.failures: dict[str, int] = {}  # "openai" | "elevenlabs" | "stt" -> HTTP status to answer

    def fail(self, api: str, status: int | None) -> None:
        if status is None:
            self.failures.pop(api, None)
        else:
            self.failures[api] = status

    def _error(self, api: str) -> Reply | None:
        status = self.failures.get(api)
        if status is None:
            return None
        message = {401: "invalid api key", 429: "quota exceeded"}.get(status, "server error")
        return json_reply({"error": {"message": message, "type": "error", "code": status}}, status)

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        if method != "POST":
            return None
        if path.startswith("/v1/audio/speech"):
            self.record(self.speech, json.loads(raw))
            return self._error("openai") or (200, self.audio, "audio/ogg")
        if path.startswith("/v1/audio/transcriptions"):
            fields = dict(re.findall(rb'name="(\w+)"\r\n\r\n([^\r]*)\r\n', raw))
            self.record(self.transcriptions, {"model": fields.get(b"model", b"").decode(), "bytes": len(raw)})
            return self._error("stt") or json_reply({"text": self.transcript})
        if match := re.match(r"/v1/text-to-speech/([^/?]+)", path):
            self.record(self.eleven, {"voiceId": match.group(1), "query": path.partition("?")[2],
                                      **json.loads(raw)})
            return self._error("elevenlabs") or (200, self.audio, "audio/mpeg")
        return json_reply({"detail": f"no route {path}"}, 404)
