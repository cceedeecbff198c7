"""Usage and cost: the rows each turn writes (``store``), the ``usage.*`` methods (``methods``), and what a chat
user meets (``chat``: the ``/usage`` answer and the daily budget's refusal)."""
