"""A real Ed25519 device identity that signs connect proofs the way OpenClaw clients do."""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.support.ws import connect_params


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class DeviceKey:
    """One device: a fresh key pair; ``id`` is the sha256 hex of the raw public key."""

    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()
        self.public_raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.id = hashlib.sha256(self.public_raw).hexdigest()

    def payload(self, params: dict[str, Any], *, nonce: str, signed_at: int, version: int, device_id: str) -> bytes:
        client = params["client"]
        auth = params.get("auth") or {}
        token = auth.get("token") or auth.get("deviceToken") or ""
        parts = [f"v{version}", device_id, client["id"], client["mode"], params["role"], ",".join(params["scopes"]),
                 str(signed_at), token, nonce]
        if version >= 3:
            parts += [client.get("platform", "").strip().lower(), client.get("deviceFamily", "").strip().lower()]
        return "|".join(parts).encode()

    def connect_params(self, token: str, nonce: str, *, version: int = 3, signed_at: int | None = None,
                       sign_nonce: str | None = None, device_id: str | None = None, tamper: bool = False,
                       **kw: Any) -> dict[str, Any]:
        """Connect params carrying a device proof; the keyword switches make specific bad proofs."""
        params = connect_params(token, **kw)
        params["client"]["deviceFamily"] = " Desktop "
        signed_at = int(time.time() * 1000) if signed_at is None else signed_at
        device_id = device_id or self.id
        signature = self.key.sign(self.payload(params, nonce=sign_nonce or nonce, signed_at=signed_at,
                                               version=version, device_id=device_id))
        if tamper:
            signature = bytes([signature[0] ^ 1]) + signature[1:]
        params["device"] = {"id": device_id, "publicKey": b64url(self.public_raw), "signature": b64url(signature),
                            "signedAt": signed_at, "nonce": sign_nonce or nonce}
        return params
