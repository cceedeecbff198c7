"""Connect-time authentication: the gateway token, failure throttling, and device proofs.

Pure functions and small classes, no sockets: ``gateway.server.app`` calls them during the handshake.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from dataclasses import dataclass, field

from gateway.protocol import InvalidRequest
from gateway.protocol.connect_params import ConnectParams

__all__ = [
    "MAX_CLOCK_SKEW_MS",
    "AuthThrottle",
    "check_token",
    "device_id_for",
    "device_payload",
    "operator_device_token",
    "verify_device",
]

MAX_CLOCK_SKEW_MS = 120_000


def check_token(expected: str, given: str | None) -> None:
    """Compare in constant time; raise the OpenClaw-shaped error on a missing or wrong token."""
    if not given:
        raise InvalidRequest("unauthorized: gateway token missing", details={"code": "AUTH_REQUIRED"})
    if not hmac.compare_digest(expected.encode(), given.encode()):
        raise InvalidRequest("unauthorized: gateway token mismatch", details={"code": "AUTH_TOKEN_MISMATCH"})


def operator_device_token(gateway_token: str, device_id: str, role: str = "operator") -> str:
    """The device token ``hello-ok`` hands an operator device that signed in with the gateway token.

    OpenClaw's Control UI keeps it and presents it (``auth.deviceToken``, with the device's proof) when the page
    is reloaded, so a reload keeps the person signed in. It is derived from the gateway token (an HMAC naming
    the device and the role), so nothing is stored: changing the gateway token revokes every device token, and
    rejecting the device (``device.pair.reject``) shuts it out. It is worth nothing without the device's key.
    """
    mac = hmac.new(gateway_token.encode(), f"remoteclaw-device-token|{role}|{device_id.lower()}".encode(),
                   hashlib.sha256)
    return "rcd_" + base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")


@dataclass
class _Failures:
    times: list[float] = field(default_factory=list)
    locked_until: float = 0.0


class AuthThrottle:
    """Counts failed handshakes per remote address and slows repeat offenders down.

    After ``max_failures`` failures inside ``window_s`` the address is locked for ``lockout_s``: its
    FAILED attempts are answered ``AUTH_RATE_LIMITED`` (with ``retryAfterMs``) after a pause. Valid
    credentials are never refused for it, so nobody sharing the address (every local client shares
    127.0.0.1) can be locked out by a guesser; and a success does not clear the record, so a guesser
    gains nothing from a legitimate client's logins. Failures simply age out of the window.
    """

    def __init__(self, *, max_failures: int = 5, window_s: float = 60.0, lockout_s: float = 30.0) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.lockout_s = lockout_s
        self._by_addr: dict[str, _Failures] = {}

    def retry_after(self, addr: str, now: float | None = None) -> float:
        """Seconds this address must still wait (0 when it may try)."""
        now = time.monotonic() if now is None else now
        rec = self._by_addr.get(addr)
        return max(0.0, rec.locked_until - now) if rec else 0.0

    def failure(self, addr: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        rec = self._by_addr.setdefault(addr, _Failures())
        rec.times = [t for t in rec.times if now - t < self.window_s]
        rec.times.append(now)
        if len(rec.times) >= self.max_failures:
            rec.locked_until = now + self.lockout_s
        if len(self._by_addr) > 10_000:  # bound memory under a spray of addresses
            self._by_addr.pop(next(iter(self._by_addr)))



def _b64url_decode(text: str, code: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidRequest("device proof is not base64url", details={"code": code}) from None


def device_id_for(public_key_raw: bytes) -> str:
    return hashlib.sha256(public_key_raw).hexdigest()


def device_payload(params: ConnectParams, token: str, *, version: int) -> bytes:
    """The string a device signs (OpenClaw's v2/v3 layout), as bytes."""
    dev = params.device
    assert dev is not None
    parts = [
        f"v{version}",
        dev.id,
        params.client.id,
        params.client.mode,
        params.role,
        ",".join(params.scopes),
        str(dev.signedAt),
        token,
        dev.nonce,
    ]
    if version >= 3:
        parts += [(params.client.platform or "").strip().lower(), (params.client.deviceFamily or "").strip().lower()]
    return "|".join(parts).encode()


def verify_device(params: ConnectParams, *, nonce: str, now_ms: int | None = None) -> str:
    """Check the optional device proof; returns the verified device id.

    Raises:
        InvalidRequest: with ``details.code`` DEVICE_AUTH_NONCE_MISMATCH, DEVICE_AUTH_SIGNATURE_EXPIRED,
            DEVICE_AUTH_PUBLIC_KEY_INVALID, DEVICE_AUTH_DEVICE_ID_MISMATCH or DEVICE_AUTH_SIGNATURE_INVALID.
    """
    dev = params.device
    assert dev is not None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if not hmac.compare_digest(dev.nonce.encode(), nonce.encode()):
        raise InvalidRequest("device proof nonce does not match the challenge",
                             details={"code": "DEVICE_AUTH_NONCE_MISMATCH"})
    if abs(now_ms - dev.signedAt) > MAX_CLOCK_SKEW_MS:
        raise InvalidRequest("device proof expired (clock skew over 2 minutes)",
                             details={"code": "DEVICE_AUTH_SIGNATURE_EXPIRED"})
    raw_key = _b64url_decode(dev.publicKey, "DEVICE_AUTH_PUBLIC_KEY_INVALID")
    if len(raw_key) != 32:
        raise InvalidRequest("device public key must be a raw 32-byte Ed25519 key (base64url)",
                             details={"code": "DEVICE_AUTH_PUBLIC_KEY_INVALID"})
    if not hmac.compare_digest(device_id_for(raw_key).encode(), dev.id.lower().encode()):
        raise InvalidRequest("device id is not the sha256 of its public key",
                             details={"code": "DEVICE_AUTH_DEVICE_ID_MISMATCH"})
    signature = _b64url_decode(dev.signature, "DEVICE_AUTH_SIGNATURE_INVALID")
    # Imported here: only clients that send a device proof pay for loading the cryptography bindings.
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = Ed25519PublicKey.from_public_bytes(raw_key)
    except ValueError:
        raise InvalidRequest("device public key is not a valid Ed25519 key",
                             details={"code": "DEVICE_AUTH_PUBLIC_KEY_INVALID"}) from None
    token = (params.auth.token or params.auth.deviceToken or "") if params.auth else ""
    for version in (3, 2):
        try:
            key.verify(signature, device_payload(params, token, version=version))
            return dev.id.lower()
        except InvalidSignature:
            continue
    raise InvalidRequest("device signature is invalid", details={"code": "DEVICE_AUTH_SIGNATURE_INVALID"})
