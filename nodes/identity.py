"""The node's identity: an Ed25519 key whose sha256 is its node id, and the connect proof signed with it.

The proof is the one OpenClaw clients send (payload v3: ``v3|id|client|mode|role|scopes|signedAt|token|nonce|
platform|family``), so the same node host pairs with a remoteclaw gateway and with OpenClaw's own.
"""

from __future__ import annotations

import base64
import hashlib
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from nodes.state import read_json, write_private

__all__ = ["NodeIdentity"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class NodeIdentity:
    """One key pair; ``node_id`` is the sha256 hex of the raw public key."""

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self.key = key
        self.public_raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.node_id = hashlib.sha256(self.public_raw).hexdigest()

    @classmethod
    def load_or_create(cls, path: Path) -> NodeIdentity:
        data = read_json(path)
        if data.get("privateKey"):
            return cls(Ed25519PrivateKey.from_private_bytes(_unb64url(str(data["privateKey"]))))
        identity = cls(Ed25519PrivateKey.generate())
        raw = identity.key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        write_private(path, {"version": 1, "nodeId": identity.node_id, "privateKey": _b64url(raw),
                             "publicKey": _b64url(identity.public_raw), "createdAtMs": int(time.time() * 1000)})
        return identity

    def proof(self, params: dict[str, Any], nonce: str) -> dict[str, Any]:
        """The ``device`` field of ``connect``: a signature over the params about to be sent."""
        client = params["client"]
        auth = params.get("auth") or {}
        token = auth.get("token") or auth.get("deviceToken") or ""
        signed_at = int(time.time() * 1000)
        payload = "|".join([
            "v3", self.node_id, client["id"], client["mode"], params["role"], ",".join(params.get("scopes") or []),
            str(signed_at), token, nonce, str(client.get("platform") or "").strip().lower(),
            str(client.get("deviceFamily") or "").strip().lower(),
        ])
        return {"id": self.node_id, "publicKey": _b64url(self.public_raw),
                "signature": _b64url(self.key.sign(payload.encode())), "signedAt": signed_at, "nonce": nonce}
