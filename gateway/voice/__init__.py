"""Voice: text to speech with provider fallback, voice-note codecs, auto-spoken replies, and speech to text for
voice messages."""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "voice",
    start="gateway.voice.service:start",
    methods=("gateway.voice.methods",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
