"""docs/security.md's access table is what the model decides: regenerate it with ``python -m gateway.access.table
--write`` after changing a declaration or the policy."""

from __future__ import annotations

from gateway.access.table import END, PAGE, START, render


def test_the_security_page_shows_what_the_model_decides() -> None:
    page = PAGE.read_text()
    shown = page[page.index(START) + len(START):page.index(END)].strip()
    assert shown == render(), "docs/security.md is stale: run .venv/bin/python -m gateway.access.table --write"


def test_the_table_can_tell_own_from_anyones() -> None:
    table = render()
    session_read = next(line for line in table.splitlines() if line.startswith("| session | read |"))
    cells = [c.strip() for c in session_read.strip("|").split("|")][4:]  # after object, action, methods, commands
    assert cells[0] == "all" and cells[2] == "own" and cells[-1] == "—", cells  # owner, member, node
