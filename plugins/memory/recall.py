"""Ranking memories for a query: keyword (full-text) alone, or hybrid with embedding vectors.

Embeddings come from any OpenAI-compatible ``/embeddings`` endpoint through the openai SDK (a local server
works: set ``baseUrl``). Vectors are stored beside the text as float32 bytes; search compares the query's
vector with every live memory's (numpy, kept in memory per agent and ``whose`` until memories change).
Hybrid score = ``vectorWeight`` x cosine + (1 - ``vectorWeight``) x keyword score. When the embedding
endpoint fails, search falls back to keywords and says so.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugins.memory.store import Memory, MemoryStore

__all__ = ["Embedder", "Recall"]


class Embedder:
    """Text -> unit vectors through the openai SDK (imported only when embeddings are configured)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from openai import AsyncOpenAI

        self.model = str(settings.get("model") or "text-embedding-3-small")
        self.base_url = settings.get("baseUrl")
        self.client = AsyncOpenAI(api_key=settings.get("apiKey") or os.environ.get("OPENAI_API_KEY") or "unset",
                                  base_url=self.base_url, timeout=float(settings.get("timeoutSeconds") or 15),
                                  max_retries=1)

    async def embed(self, texts: list[str]) -> list[bytes]:
        import numpy as np

        answer = await self.client.embeddings.create(model=self.model, input=texts)
        out = []
        for item in sorted(answer.data, key=lambda d: d.index):
            vec = np.asarray(item.embedding, dtype=np.float32)
            norm = float(np.linalg.norm(vec)) or 1.0
            out.append((vec / norm).tobytes())
        return out


class Recall:
    """Search over one store, with or without an embedder."""

    def __init__(self, store: MemoryStore, embedder: Embedder | None, vector_weight: float = 0.7) -> None:
        self.store = store
        self.embedder = embedder
        self.vector_weight = vector_weight
        self._vectors: dict[tuple[str, str | None], tuple[int, list[str], dict[str, int], Any]] = {}
        self.generation = 0
        """Bumped on every write, so cached vector matrices are rebuilt after a change."""

    def changed(self) -> None:
        self.generation += 1

    async def embed_one(self, content: str) -> tuple[bytes | None, str | None]:
        if self.embedder is None:
            return None, None
        try:
            return (await self.embedder.embed([content]))[0], None
        except Exception as exc:
            return None, f"embeddings unavailable ({type(exc).__name__}: {exc})"

    async def _matrix(self, agent_id: str, whose: str | None) -> tuple[list[str], dict[str, int], Any]:
        """The vectors of the agent's memories of ``whose`` as one matrix (rows in ``ids`` order), and each id's row."""
        import numpy as np

        cached = self._vectors.get((agent_id, whose))
        if cached and cached[0] == self.generation:
            return cached[1], cached[2], cached[3]
        rows = await self.store.with_embeddings(agent_id, whose)
        if len({len(r[1]) for r in rows}) > 1:  # the model changed: keep the vectors of the newest size
            size = len(rows[-1][1])
            rows = [r for r in rows if len(r[1]) == size]
        ids = [r[0] for r in rows]
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1) \
            if rows else np.zeros((0, 0), dtype=np.float32)
        rows_of = {memory_id: n for n, memory_id in enumerate(ids)}
        self._vectors[(agent_id, whose)] = (self.generation, ids, rows_of, matrix)
        return ids, rows_of, matrix

    async def search(self, agent_id: str, query: str, max_results: int, min_score: float, whose: str | None = None
                     ) -> tuple[list[tuple[Memory, float]], str, str | None]:
        """``(results, mode, note)`` among the memories of ``whose`` (``MemoryStore``): best first, scores in
        [0, 1]; mode ``keyword`` or ``hybrid``."""
        pool = max(max_results * 4, 20)
        # The keyword query (a database round trip) and the query's embedding (an HTTP round trip) at once.
        keyword, (vector, note) = await asyncio.gather(self.store.keyword(agent_id, query, pool, whose),
                                                       self.embed_one(query))
        if vector is None:
            hits = [(m, s) for m, s in keyword if s >= min_score][:max_results]
            return hits, "keyword", note
        import numpy as np

        ids, rows_of, matrix = await self._matrix(agent_id, whose)
        kw = {m.id: (m, s) for m, s in keyword}
        sims: dict[str, float] = {}
        if len(ids) and matrix.shape[1] * 4 == len(vector):
            scores = matrix @ np.frombuffer(vector, dtype=np.float32)
            top = np.argpartition(-scores, pool - 1)[:pool] if len(ids) > pool else range(len(ids))
            sims = {ids[i]: max(float(scores[i]), 0.0) for i in top}
            for memory_id in kw:
                if memory_id not in sims and memory_id in rows_of:
                    sims[memory_id] = max(float(scores[rows_of[memory_id]]), 0.0)
        missing = [i for i in sims if i not in kw]
        found = await self.store.by_ids(agent_id, missing, whose)
        w = self.vector_weight
        ranked = []
        for memory_id in set(kw) | set(found):
            memory = kw[memory_id][0] if memory_id in kw else found[memory_id]
            score = w * sims.get(memory_id, 0.0) + (1 - w) * (kw[memory_id][1] if memory_id in kw else 0.0)
            if score >= min_score:
                ranked.append((memory, round(score, 4)))
        ranked.sort(key=lambda pair: -pair[1])
        return ranked[:max_results], "hybrid", None
