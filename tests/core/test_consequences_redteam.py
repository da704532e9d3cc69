"""The red team of issue 32 (rt32): every confirmed finding's call, set up for real on a temporary
git repository and asked of the real broker in approve-all mode, with the person denying.

Each row's call destroyed data, leaked a secret or ran the repository's code without the person;
now it must reach the person (and a row with a ``check`` also says what the facts must show or not
do). A finding not fixed yet is a strict expected failure with the reason, so closing it fails here
until it leaves ``OPEN``. The findings are in ``/work/notes/rt32.md``; the repository is
:func:`tests.support.projects.make_repository`.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from desktop_approver.core.calls.risk.touching import assess_touching
from desktop_approver.core.decisions.tickets import Identity
from tests.support.projects import GITHUB_TOKEN, approve_all, git, last_ticket, make_repository, run, who_in

Setup = Callable[[Path], "str | None"]
"""Prepares the repository; returns the marker file that must not exist after the look, if any."""


@dataclass(frozen=True)
class Row:
    finding: str
    command: str
    setup: Setup = lambda repo: None
    who: Callable[[Path], Identity] = who_in
    never_shown: tuple[str, ...] = field(default=())    # words no line of "What this touches" may say
    person: bool = True     # False: the finding was the look itself (it ran code) or what was shown


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def _stat_dirty(path: Path) -> None:
    later = time.time() + 5
    os.utime(path, (later, later))


def assume_unchanged(repo: Path) -> None:
    git(repo, "update-index", "--assume-unchanged", "a.txt")
    (repo / "a.txt").write_text("edits git never had\n")


def skip_worktree(repo: Path) -> None:
    git(repo, "update-index", "--skip-worktree", "src/app.py")
    (repo / "src" / "app.py").write_text("edits git never had\n")


def ignorecase(repo: Path) -> None:
    git(repo, "config", "core.ignorecase", "true")
    (repo / "A.TXT").write_text("the only copy\n")


def data_build(repo: Path) -> None:
    (repo / "data" / "build").mkdir()
    (repo / "data" / "build" / "2024.csv").write_text("only,copy\n")


def experiments_out(repo: Path) -> None:
    with (repo / ".gitignore").open("a") as handle:
        handle.write("experiments/\n")
    (repo / "experiments" / "out").mkdir(parents=True)
    (repo / "experiments" / "out" / "run.parquet").write_text("only copy\n")


def nested_in_build(repo: Path) -> None:
    lib = repo / "build" / "_deps" / "mylib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    (lib / "lib.c").write_text("int x;\n")
    _commit(lib, "unpushed")
    (lib / "wip.c").write_text("int wip;\n")


def _secret_free(repo: Path) -> None:
    (repo / ".env").unlink()
    (repo / "certs" / "key.pem").unlink()


def nested_repo_secret(repo: Path) -> None:
    _secret_free(repo)
    lib = repo / "vendor" / "lib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    (lib / "config.txt").write_text(f"token = {GITHUB_TOKEN}\n")


def rgignore_reinclude(repo: Path) -> None:
    _secret_free(repo)
    (repo / "data" / "creds.txt").write_text(f"token = {GITHUB_TOKEN}\n")
    (repo / ".ignore").write_text("!data/\n")


def remote_with_token(repo: Path) -> None:
    _secret_free(repo)
    git(repo, "remote", "add", "origin", f"https://x-access-token:{GITHUB_TOKEN}@github.com/acme/app.git")


def transform_tar(repo: Path) -> None:
    data = b"#!/bin/sh\necho owned\n"
    with tarfile.open(repo / "tr.tar", "w") as archive:
        info = tarfile.TarInfo("pre-commit")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))


def patch_through_link(repo: Path) -> None:
    home = repo.parent / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine\n")
    (repo / "vendor").symlink_to(home)
    (repo / "fix2.patch").write_text("--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-mine\n+theirs\n")


def link_then_dotdot(repo: Path) -> None:
    inner = repo.parent / "elsewhere" / "inner"
    inner.mkdir(parents=True)
    (repo.parent / "elsewhere" / "src").mkdir()
    (repo.parent / "elsewhere" / "src" / "thesis.tex").write_text("only copy\n")
    (repo.parent / "elsewhere" / "notes.md").write_text(f"token = {GITHUB_TOKEN}\n")
    (repo / "cache").symlink_to(inner)


def links_in_destination(repo: Path) -> None:
    victim = repo.parent / "victim_rc"
    victim.write_text("original rc\n")
    (repo / "sub").mkdir()
    os.link(victim, repo / "sub" / "a.txt")
    (repo / "notes").mkdir()
    (repo / "notes" / "a.txt").symlink_to(victim)


def data_copy_of_a(repo: Path) -> None:
    (repo / "data" / "a.txt").write_text("the only copy\n")


def other_folder(repo: Path) -> None:
    (repo.parent / "other").mkdir()
    (repo.parent / "other" / "a.txt").write_text("the only copy\n")


def only_build_ignored(repo: Path) -> None:
    _secret_free(repo)
    (repo / ".gitignore").write_text("build/\nnode_modules/\n")
    import shutil
    shutil.rmtree(repo / "data")
    _commit(repo, "ignore")
    (repo / "b.txt").write_text("b, changed and not committed\n")


def tracked_creds(repo: Path) -> None:
    (repo / "config" / "prod").mkdir(parents=True)
    (repo / "config" / "prod" / "creds.txt").write_text(f"token = {GITHUB_TOKEN}\n")
    _commit(repo, "creds")


def creds_file(repo: Path) -> None:
    (repo / "creds").write_text(f"token = {GITHUB_TOKEN}\n")


def credential_formats(repo: Path) -> None:
    _secret_free(repo)
    (repo / ".pgpass").write_text("db.example.com:5432:prod:alice:Xk29vQ7mLp03rTz\n")
    (repo / ".netrc").write_text("machine api.example.com\n  login alice\n  password Xk29vQ7mLp03rTz\n")
    (repo / "deploy.sh").write_text("sshpass -p 'Xk29vQ7mLp03rTz' ssh deploy@host\n"
                                    "curl -H 'Authorization: Bearer Xk29vQ7mLp03rTzQq81' https://api\n")


def forwarded(directory: Path) -> Identity:
    return who_in(directory, peer_exe="/usr/bin/ssh", peer_cwd=None, cwd_agrees=None)


def worktree_filter(repo: Path) -> str:
    marker = repo.parent / "FILTER_RAN"
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "filter.x.clean", f"sh -c 'touch {marker}; cat'")
    (repo / ".gitattributes").write_text("*.txt filter=x\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    _stat_dirty(repo / "a.txt")
    marker.unlink(missing_ok=True)
    return str(marker)


def submodule_filter(repo: Path) -> str:
    upstream = repo.parent / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "f.txt").write_text("hi\n")
    _commit(upstream, "init")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "mod")
    git(repo, "commit", "-qm", "submodule")
    marker = repo.parent / "SUBMODULE_FILTER_RAN"
    mod = repo / "mod"
    git(mod, "config", "filter.y.clean", f"sh -c 'touch {marker}; cat'")
    (mod / ".gitattributes").write_text("*.txt filter=y\n")
    _commit(mod, "attributes")
    _stat_dirty(mod / "f.txt")
    marker.unlink(missing_ok=True)
    return str(marker)


def windows_zip(repo: Path) -> None:
    with zipfile.ZipFile(repo / "fix.zip", "w") as archive:
        info = zipfile.ZipInfo(".git\\hooks\\pre-commit")
        info.create_system = 0
        archive.writestr(info, "#!/bin/sh\necho owned\n")


def worktree(repo: Path) -> None:
    git(repo, "worktree", "add", "-q", "wt2", "-b", "side")
    (repo / "wt2" / "notes.txt").write_text("wip only here\n")


def many_links(repo: Path) -> None:
    with tarfile.open(repo / "links.tar", "w") as archive:
        for n in range(3_000):
            info = tarfile.TarInfo(f"l{n}\u202e")
            info.type = tarfile.SYMTYPE
            info.linkname = f"/etc/x{n}"
            archive.addfile(info)


ROWS: list[Row] = [
    Row("RT32-01", "rm a.txt", assume_unchanged),
    Row("RT32-01", "rm -rf src", skip_worktree),
    Row("RT32-02", "rm A.TXT", ignorecase),
    Row("RT32-03", "rm -rf data/build", data_build),
    Row("RT32-03", "rm -rf experiments/out", experiments_out),
    Row("RT32-04", "rm -rf build", nested_in_build),
    Row("RT32-05", "rg ghp_", nested_repo_secret),
    Row("RT32-05", "rg ghp_", rgignore_reinclude),
    Row("RT32-06", "grep -r x-access-token .", remote_with_token),
    Row("RT32-06", "rg --hidden ghp_", remote_with_token),
    Row("RT32-07", "tar -cf - ."),
    Row("RT32-08", "tar -xf tr.tar --transform 's,^,.git/hooks/,'", transform_tar),
    Row("RT32-09", "patch -d vendor -p1 < fix2.patch", patch_through_link),
    Row("RT32-10", "rm -rf cache/../src", link_then_dotdot),
    Row("RT32-10", "cat cache/../notes.md", link_then_dotdot),
    Row("RT32-11", "cp a.txt sub/", links_in_destination),
    Row("RT32-11", "cp a.txt notes/", links_in_destination),
    Row("RT32-12", "cd data && rm a.txt", data_copy_of_a, never_shown=("unchanged in git",)),
    Row("RT32-12", "cd data && rm results.csv", never_shown=("nothing there to lose",)),
    # under /tmp the reader's own rule for scratch files in the temp directory answers it; the facts must not lie
    Row("RT32-13", "cd ../other && rm a.txt", other_folder, never_shown=("Nothing is lost", "unchanged in git"),
        person=False),
    Row("RT32-14", "echo c.txt >> .gitignore && git clean -fX", only_build_ignored),
    Row("RT32-14", "git add -A && git reset --hard", only_build_ignored),
    Row("RT32-15", "shopt -s globstar; cat **/creds.txt", tracked_creds),
    Row("RT32-15", "bash -O globstar -c 'cat **/creds.txt'", tracked_creds),
    Row("RT32-16", "comm creds creds", creds_file),
    Row("RT32-16", "join creds creds", creds_file),
    Row("RT32-16", "rev creds", creds_file),
    Row("RT32-17", "grep -r Xk29 .", credential_formats),
    Row("RT32-18", "rm a.txt", who=forwarded),
    Row("RT32-19", "rm a.txt", worktree_filter),
    Row("RT32-21", "rm -rf .git", never_shown=("git can bring them back",)),
    Row("RT32-23", "git mv -f a.txt b.txt"),
    Row("RT32-24", "unzip -o fix.zip", windows_zip),
    Row("RT32-25", "tar -xf links.tar", many_links),
    Row("RT32-26", "cp -r a.txt c.txt"),
    Row("RT32-26", "cp -a a.txt data/results.csv"),
    Row("RT32-26", "cp -R src/app.py b.txt"),
    Row("RT32-27", "echo $DATABASE_URL"),
    Row("RT32-27", "echo $SLACK_WEBHOOK"),
    Row("RT32-27", "for X in GITHUB_TOKEN; do echo ${!X}; done"),
    Row("RT32-27", "printf -v X GITHUB_TOKEN; echo ${!X}"),
    Row("RT32-28", "rm a.txt", submodule_filter, person=False),    # a.txt is tracked and unchanged
    Row("RT32-29", "shopt -s extglob\nrm -f !(a.txt)"),
    Row("RT32-29", "shopt -s extglob; rm -f @(b|c).txt"),
    Row("RT32-29", "shopt -s nocaseglob; rm -f C.TXT*"),
    Row("RT32-30", "git worktree remove --force wt2", worktree),
]

OPEN: dict[str, str] = {}
"""Findings not closed yet, with why (their rows are strict expected failures)."""


def _case(index: int, row: Row) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=f"open: {OPEN[row.finding]}")] if row.finding in OPEN else []
    return pytest.param(row, id=f"{index}-{row.finding}-{row.command[:40]}", marks=marks)


def test_every_finding_has_a_row() -> None:
    found = {row.finding for row in ROWS}
    # RT32-20 (the view's tooltip) and RT32-22 (one agent starving another) are not calls: their
    # tests are in tests/gui/test_consequences_view.py and tests/core/test_consequences.py
    assert found | {"RT32-20", "RT32-22"} == {f"RT32-{n:02}" for n in range(1, 31)}
    assert set(OPEN) <= found


@pytest.mark.parametrize("row", [_case(index, row) for index, row in enumerate(ROWS)])
def test_no_red_team_call_is_answered_without_the_person(tmp_path: Path, row: Row) -> None:
    repo = make_repository(tmp_path)
    marker = row.setup(repo)
    broker, person = approve_all(tmp_path)
    verdict = run(broker, row.who(repo), row.command)
    if marker is not None:
        assert not Path(marker).exists(), "looking at the files ran the repository's program"
    if row.person:
        assert verdict.decided_by == "user", verdict
    if not row.never_shown:
        return
    if person.seen:
        facts = last_ticket(person).calls[0].consequences
    else:
        facts = assess_touching("Bash", {"command": row.command}, cwd=str(repo))[1]
    shown = " ".join(facts.lines() + [facts.summary()]) if facts else ""
    for words in row.never_shown:
        assert words not in shown, shown


def test_the_red_teams_copies_really_destroy(tmp_path: Path) -> None:
    """The table's premise, checked once for real: a recursive copy over a file overwrites it."""
    repo = make_repository(tmp_path)
    subprocess.run(["cp", "-r", "a.txt", "c.txt"], cwd=repo, check=True)
    assert (repo / "c.txt").read_text() == "a\n"
