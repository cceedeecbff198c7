"""Agent runs: how a queued run becomes a CLI process, events, transcript rows and a delivered reply.

- ``executor``: ``AgentExecutor``, the run queue's executor for every run (channel messages,
  ``agent``, ``chat.send``, sub-agents, cron) and the delivery of its result;
- ``inbound``: an allowed chat message -> its session -> a chat command's answer or a run request;
- ``context``: what a run's MCP shim is told (``REMOTECLAW_*``) and the run's own token (``tokens``);
- ``stream``: runtime events -> ``agent``/``chat`` events and transcript rows;
- ``workspace``, ``reply``: the per-session working folder; shaping and de-duplicating replies;
- ``runtimes/``: one adapter per agent CLI, found through the ``remoteclaw.runtimes`` extension point.

This package imports lazily (nothing here at import time): the chat-command registry
(``gateway.dispatch.commands``) imports ``agents.commands`` and the other command modules, and the executor
imports ``gateway.platforms``.
"""
