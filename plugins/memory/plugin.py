"""The memory plugin: six tools that give every agent a long-term memory of its own.

``memory_search`` (full-text, or hybrid with embeddings), ``memory_get`` (lines of one memory),
``memory_remember`` (tiers ``core`` permanent, ``stable`` 7 days, ``notes`` 24 h), ``memory_forget`` (only
with ``confirmed: true``), ``memory_stats`` and ``memory_flush`` (a summary kept before a context is
compacted). Memories belong to the run's agent and to whom the run is for (``ToolContext.whose``): on an agent
several people talk to, a person's run finds only that person's memories, a stranger's conversation only its
own, the owner's run the owner's. The owner manages them all with ``remoteclaw memory`` through the ``memory.*``
methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from gateway.extras import MissingExtra, installed
from gateway.plugin_host import PluginApi, ToolContext, ToolFailed, whose_for
from plugins.memory.recall import Embedder, Recall
from plugins.memory.store import EVERYONE, TIERS, MemoryStore

__all__ = ["register"]

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
WRITES = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
DELETES = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["query"],
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to look for."},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
        "min_score": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.3},
    },
}
GET_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 300, "description": "A memory id or path "
                 "from memory_search."},
        "id": {"type": "string", "minLength": 1, "maxLength": 300},
        "from_line": {"type": "integer", "minimum": 1, "default": 1},
        "lines": {"type": "integer", "minimum": 1, "maximum": 10000},
    },
}
REMEMBER_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["content"],
    "properties": {
        "content": {"type": "string", "minLength": 1, "maxLength": 20000},
        "tier": {"enum": list(TIERS), "default": "stable",
                 "description": "core: permanent; stable: 7 days; notes: 24 hours."},
    },
}
FORGET_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["content_or_id"],
    "properties": {
        "content_or_id": {"type": "string", "minLength": 1, "maxLength": 20000},
        "confirmed": {"type": "boolean", "default": False, "description": "Must be true: deleting is final."},
    },
}
_TEXT_LIST = {"type": "array", "items": {"type": "string", "maxLength": 2000}, "maxItems": 100}
FLUSH_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {"topics": _TEXT_LIST, "decisions": _TEXT_LIST, "action_items": _TEXT_LIST,
                   "summary": {"type": "string", "maxLength": 20000}},
}

# What each tool answers (its MCP ``structuredContent``): open objects naming the fields always present.
_STR: dict[str, Any] = {"type": "string"}
_STR0: dict[str, Any] = {"type": ["string", "null"]}
_INT: dict[str, Any] = {"type": "integer"}
_MEMORY = {"id": _STR, "path": _STR0, "tier": {"enum": list(TIERS)}, "createdAt": _STR, "expiresAt": _STR0,
           "lines": _INT}


def _answer(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required)}


_STORED = _answer({**_MEMORY, "created": {"type": "boolean"}}, {"note": _STR})
OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "memory_search": _answer({"query": _STR, "mode": {"enum": ["keyword", "hybrid"]}, "results": {
        "type": "array", "items": _answer({**_MEMORY, "score": {"type": "number"}, "snippet": _STR})}},
        {"note": _STR}),
    "memory_get": _answer({**_MEMORY, "fromLine": _INT, "totalLines": _INT, "content": _STR}),
    "memory_remember": _STORED,
    "memory_forget": _answer({"forgotten": _INT, "ids": {"type": "array", "items": _STR}}),
    "memory_stats": _answer({"agentId": _STR, "total": _INT, "byTier": {"type": "object"}, "withEmbeddings": _INT,
                             "oldest": _STR0, "newest": _STR0, "index": _STR, "search": {"enum": ["keyword", "hybrid"]},
                             "embeddings": {"type": ["object", "null"]}}, {"embeddingsUnavailable": _STR}),
    "memory_flush": _STORED,
}


class MemoryPlugin:
    """The plugin's state for one load: the store, the recall engine, the expiry sweeper."""

    def __init__(self, api: PluginApi) -> None:
        self.api = api
        self.store = MemoryStore(api.db)
        embeddings = api.config.get("embeddings")
        self.embeddings_missing: str | None = None
        """Embeddings configured but the ``embeddings`` extra not installed: search stays keyword-only, and says why."""
        if embeddings and not installed("embeddings"):
            self.embeddings_missing = MissingExtra("embeddings", "hybrid memory search").message
            embeddings = None
        self.recall = Recall(self.store, Embedder(embeddings) if embeddings else None,
                             float(api.config.get("vectorWeight", 0.7)))
        self.sweep_s = float(api.config.get("sweepMinutes", 10)) * 60
        self._sweeper: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.create_schema()
        self._sweeper = asyncio.create_task(self._sweep_loop(), name="memory-sweep")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper

    async def _sweep_loop(self) -> None:
        while True:
            try:
                removed = await self.store.sweep()
                if removed:
                    self.recall.changed()
                    self.api.log.info("expired memories deleted", count=removed)
            except Exception:
                self.api.log.exception("memory sweep failed")
            await asyncio.sleep(self.sweep_s)

    # -- tools -----------------------------------------------------------------------------------

    async def search(self, p: dict[str, Any], agent_id: str, whose: str | None) -> dict[str, Any]:
        hits, mode, note = await self.recall.search(agent_id, p["query"], int(p.get("max_results", 5)),
                                                    float(p.get("min_score", 0.3)), whose)
        results = []
        for memory, score in hits:
            snippet = memory.content if len(memory.content) <= 400 else memory.content[:400] + "…"
            results.append({**memory.describe(), "score": round(score, 4), "snippet": snippet})
        out: dict[str, Any] = {"query": p["query"], "mode": mode, "results": results}
        if note or self.embeddings_missing:
            out["note"] = note or self.embeddings_missing
        return out

    async def get(self, p: dict[str, Any], agent_id: str, whose: str | None) -> dict[str, Any]:
        ref = p.get("path") or p.get("id")
        if not ref:
            raise ToolFailed("give path (a memory id or path from memory_search)")
        memory = await self.store.get(agent_id, ref, whose)
        if memory is None:
            raise ToolFailed(f"no memory {ref!r} (it may have expired or been forgotten)")
        lines = memory.content.split("\n")
        start = int(p.get("from_line", 1))
        count = int(p.get("lines") or len(lines))
        chosen = lines[start - 1:start - 1 + count]
        return {**memory.describe(), "fromLine": start, "totalLines": len(lines), "content": "\n".join(chosen)}

    async def remember(self, p: dict[str, Any], agent_id: str, whose: str | None, *,
                       path: str | None = None) -> dict[str, Any]:
        content = p["content"].strip()
        if not content:
            raise ToolFailed("content is empty")
        vector, note = await self.recall.embed_one(content)
        memory, created = await self.store.remember(agent_id, content, p.get("tier", "stable"), path=path,
                                                    embedding=vector, whose=whose)
        self.recall.changed()
        out = {**memory.describe(), "created": created}
        if note or self.embeddings_missing:
            out["note"] = note or self.embeddings_missing
        return out

    async def forget(self, p: dict[str, Any], agent_id: str, whose: str | None) -> dict[str, Any]:
        target = p["content_or_id"].strip()
        if p.get("confirmed") is not True:
            raise ToolFailed("memory_forget deletes for good: call it again with confirmed: true")
        memory = await self.store.get(agent_id, target, whose)
        matches = [memory] if memory is not None else await self.store.find_content(agent_id, target, whose=whose)
        if not matches:
            raise ToolFailed(f"no memory matches {target[:80]!r}")
        if len(matches) > 1 and memory is None and matches[0].content != target:
            listed = "; ".join(f"{m.id}: {m.content[:60]}" for m in matches[:5])
            raise ToolFailed(f"{len(matches)} memories contain that text; forget one by id ({listed})")
        removed = await self.store.forget(agent_id, [m.id for m in matches], whose)
        self.recall.changed()
        return {"forgotten": removed, "ids": [m.id for m in matches]}

    async def stats(self, agent_id: str, whose: str | None) -> dict[str, Any]:
        stats = await self.store.stats(agent_id, whose)
        embedder = self.recall.embedder
        stats["agentId"] = agent_id
        stats["embeddings"] = ({"model": embedder.model, "baseUrl": str(embedder.base_url or "api.openai.com")}
                               if embedder else None)
        stats["search"] = "hybrid" if embedder else "keyword"
        if self.embeddings_missing:
            stats["embeddingsUnavailable"] = self.embeddings_missing
        return stats

    async def flush(self, p: dict[str, Any], agent_id: str, whose: str | None) -> dict[str, Any]:
        parts = []
        if p.get("summary"):
            parts.append(f"Summary: {p['summary'].strip()}")
        for key, title in (("topics", "Topics"), ("decisions", "Decisions"), ("action_items", "Action items")):
            if p.get(key):
                parts.append(f"{title}:\n" + "\n".join(f"- {item}" for item in p[key]))
        if not parts:
            raise ToolFailed("nothing to flush: give summary, topics, decisions or action_items")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.store.clock()))
        return await self.remember({"content": "\n".join(parts), "tier": "stable"}, agent_id, whose,
                                   path=f"flush/{stamp}")


def whose_of(ctx: Any) -> str | None:
    """Whose memories a ``memory.*`` method reaches: everyone's for the owner, else what the caller's own tool
    calls reach (``whose_for``)."""
    whose = whose_for(ctx.caller, None)
    return EVERYONE if whose is None else whose


def register(api: PluginApi) -> None:
    plugin = MemoryPlugin(api)
    api.service("memory-store", plugin.start, plugin.stop)

    def agent_tool(fn: Any) -> Any:
        async def handler(p: dict[str, Any], ctx: ToolContext) -> Any:
            return await fn(p, ctx.agent_id, ctx.whose)
        return handler

    api.tool("memory_search", "Search your long-term memories (hybrid semantic + keyword when embeddings are "
             "configured). Returns ids, scores and snippets; read a whole memory with memory_get.",
             SEARCH_SCHEMA, agent_tool(plugin.search), annotations=READ_ONLY,
             output_schema=OUTPUT_SCHEMAS["memory_search"])
    api.tool("memory_get", "Read a memory (or some of its lines) by the id or path memory_search gave.",
             GET_SCHEMA, agent_tool(plugin.get), annotations=READ_ONLY,
             output_schema=OUTPUT_SCHEMAS["memory_get"])
    api.tool("memory_remember", "Store a memory. tier: core (permanent), stable (7 days, default), notes (24 h). "
             "Storing the same text again refreshes it.", REMEMBER_SCHEMA, agent_tool(plugin.remember),
             annotations=WRITES, output_schema=OUTPUT_SCHEMAS["memory_remember"])
    api.tool("memory_forget", "Delete a memory by id or by its text. Destructive: requires confirmed: true.",
             FORGET_SCHEMA, agent_tool(plugin.forget), annotations=DELETES,
             output_schema=OUTPUT_SCHEMAS["memory_forget"])
    api.tool("memory_stats", "How many memories you have per tier, the index and the embedding model.",
             {"type": "object", "properties": {}, "additionalProperties": False},
             agent_tool(lambda _p, agent_id, whose: plugin.stats(agent_id, whose)), annotations=READ_ONLY,
             output_schema=OUTPUT_SCHEMAS["memory_stats"])
    api.tool("memory_flush", "Before your context is compacted, keep its key topics, decisions, action items "
             "and a summary as one memory (tier stable).", FLUSH_SCHEMA, agent_tool(plugin.flush),
             annotations=WRITES, output_schema=OUTPUT_SCHEMAS["memory_flush"])

    # The owner's view, for ``remoteclaw memory`` (any agent's memories, everyone's).
    agent = {"type": "string", "minLength": 1, "maxLength": 64}

    def agent_of(p: dict[str, Any], ctx: Any) -> str:
        return str(p.get("agentId") or ctx.sessions.default_agent_id)

    async def m_search(p: dict[str, Any], ctx: Any) -> Any:
        return await plugin.search({k: v for k, v in p.items() if k != "agentId"}, agent_of(p, ctx), whose_of(ctx))

    async def m_list(p: dict[str, Any], ctx: Any) -> Any:
        memories = await plugin.store.recent(agent_of(p, ctx), tier=p.get("tier"), limit=int(p.get("limit", 50)),
                                             whose=whose_of(ctx))
        return {"agentId": agent_of(p, ctx), "memories": [{**m.describe(), "content": m.content} for m in memories]}

    async def m_forget(p: dict[str, Any], ctx: Any) -> Any:
        return await plugin.forget({"content_or_id": p["id"], "confirmed": True}, agent_of(p, ctx), whose_of(ctx))

    async def m_stats(p: dict[str, Any], ctx: Any) -> Any:
        return await plugin.stats(agent_of(p, ctx), whose_of(ctx))

    api.method("memory.search", m_search, scope="operator.read", description="Search an agent's memories.",
               params_schema={**SEARCH_SCHEMA, "properties": {**SEARCH_SCHEMA["properties"], "agentId": agent}})
    api.method("memory.list", m_list, scope="operator.read", description="An agent's memories, newest first.",
               params_schema={"type": "object", "additionalProperties": False, "properties": {
                   "agentId": agent, "tier": {"enum": list(TIERS)},
                   "limit": {"type": "integer", "minimum": 1, "maximum": 1000}}})
    api.method("memory.forget", m_forget, scope="operator.admin", description="Delete one of an agent's memories.",
               params_schema={"type": "object", "additionalProperties": False, "required": ["id"],
                              "properties": {"agentId": agent, "id": {"type": "string", "minLength": 1}}})
    api.method("memory.stats", m_stats, scope="operator.read", description="An agent's memory statistics.",
               params_schema={"type": "object", "additionalProperties": False, "properties": {"agentId": agent}})
