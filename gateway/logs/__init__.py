"""The gateway's own log: where records go, scrubbed of every known secret (``sink``: the JSON file, the console,
the queue thread), and reading it back (``methods``: ``logs.tail``)."""
