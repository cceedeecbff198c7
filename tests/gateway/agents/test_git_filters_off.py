"""What the gateway's (and a node's) git runs in a project runs nothing the repository names: a turn may write a
filter driver into the repository's config and a ``.gitattributes`` that applies it, and the snapshot before and
after the turn (``git add``), the worktree's checkout and its diff must not start it outside the sandbox."""

from __future__ import annotations

from pathlib import Path

from gateway.projects import diffs
from gateway.projects import workdir as projects
from tests.support.gitrepo import git, make_repo


def planted(repo: Path, marker: Path) -> None:
    """The repository's config names a filter and a textconv that would each leave ``marker`` when run (its
    committed ``.gitattributes`` applies them to ``*.txt``)."""
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    git(repo, "config", "filter.evil.smudge", f"touch {marker}; cat")
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "diff.evil.textconv", f"touch {marker}; cat")


async def test_no_filter_or_textconv_of_the_repository_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "web", {"a.txt": "one\n", ".gitattributes": "*.txt filter=evil diff=evil\n"})
    marker = tmp_path / "ran"
    planted(repo, marker)
    before = await diffs.snapshot(repo)
    (repo / "a.txt").write_text("one\ntwo\n")
    (repo / "b.txt").write_text("new\n")
    diff = await diffs.diff_trees(repo, before, await diffs.snapshot(repo))
    assert diff.files == 2 and "+two" in diff.text
    entries, _cut = await diffs.file_entries(repo, before, await diffs.snapshot(repo))
    assert {e["path"] for e in entries} == {"a.txt", "b.txt"}
    tree, _branch = await projects.ensure_worktree(repo, "agent:main:direct:1")
    assert (tree / "a.txt").read_text() == "one\n"
    await projects.remove_worktree_in(repo, "agent:main:direct:1")
    assert not marker.exists(), "a filter or textconv the repository names ran"
    git(repo, "add", "b.txt")  # the check itself: plain git does run it
    assert marker.exists()
