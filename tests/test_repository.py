"""What the repository itself holds: no symbolic links (a link to a local cache once got committed, and a clean
clone then had a ``.cache`` pointing at a folder of the machine it was made on)."""

from __future__ import annotations

import subprocess

from tests.support.gateway_proc import ROOT


def test_no_symbolic_links_are_tracked() -> None:
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    links = [line.split("\t", 1)[1] for line in listed.splitlines() if line.startswith("120000 ")]
    assert links == []
