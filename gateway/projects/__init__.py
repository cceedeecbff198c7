"""Projects: the folder a conversation's turns run in (``workdir``: a project, a git worktree of it, or a private
folder), what a turn changed there (``diffs``), ``/project`` and ``/diff`` (``commands``), ``/handoff``
(``handoff``), and their methods (``methods``, ``handoff_methods``)."""
