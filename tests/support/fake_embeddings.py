"""A loopback fake of the OpenAI embeddings endpoint (``POST /v1/embeddings``), for hybrid memory search.

Vectors are deterministic and carry a little meaning: each word is mapped to a concept (``tea``,
``coffee`` and ``beverage`` are all ``drink``) and hashed into one of ``DIMS`` dimensions, so a query
can find a memory it shares no word with, which keywords alone cannot. ``fail_with`` makes every
answer that HTTP status (the plugin must fall back to keywords). Request bodies are kept in ``requests``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tests.support.fake_http import FakeHTTPServer, Reply, json_reply

__all__ = ["FakeEmbeddings"]

DIMS = 64
CONCEPTS = {"tea": "drink", "coffee": "drink", "beverage": "drink", "drink": "drink", "favourite": "like",
            "prefers": "like", "likes": "like", "deploy": "release", "release": "release", "ship": "release"}


def embed(text: str) -> list[float]:
    vec = [0.0] * DIMS
    for word in re.findall(r"\w+", text.lower()):
        concept = CONCEPTS.get(word, word)
        vec[int(hashlib.sha256(concept.encode()).hexdigest(), 16) % DIMS] += 1.0
    return vec


class FakeEmbeddings(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        self.fail_with: int | None = None

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        if method != "POST" or not path.endswith("/embeddings"):
            return None
        body = json.loads(raw)
        self.record(self.requests, body)
        if self.fail_with:
            return json_reply({"error": {"message": "quota exceeded", "type": "insufficient_quota"}}, self.fail_with)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return json_reply({"object": "list", "model": body["model"],
                           "data": [{"object": "embedding", "index": i, "embedding": embed(t)}
                                    for i, t in enumerate(inputs)],
                           "usage": {"prompt_tokens": 1, "total_tokens": 1}})
