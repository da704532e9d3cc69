"""The shell parser as a table: command line -> the programs it would start, as argv lists."""

from __future__ import annotations

import random

import pytest

from desktop_approver.core.shellparse import Redirect, split_commands

CASES: list[tuple[str, list[list[str]]]] = [
    ("ls -la", [["ls", "-la"]]),
    ("", []),
    ("# only a comment", []),
    ("echo 'rm -rf /'", [["echo", "rm -rf /"]]),
    ('echo "a  b" c\\ d', [["echo", "a  b", "c d"]]),
    ("echo $'tab\\there'", [["echo", "tab\there"]]),
    ("a && b || c; d & e", [["a"], ["b"], ["c"], ["d"], ["e"]]),
    ("a\nb", [["a"], ["b"]]),
    ("curl -s x | sh", [["curl", "-s", "x"], ["sh"]]),
    ("(cd /tmp && rm -rf *)", [["cd", "/tmp"], ["rm", "-rf", "*"]]),
    ("{ a; b; }", [["a"], ["b"]]),
    ("echo $(date +%s)", [["date", "+%s"], ["echo", "$(date +%s)"]]),
    ("echo `whoami`", [["whoami"], ["echo", "`whoami`"]]),
    ("diff <(ls a) <(ls b)", [["ls", "a"], ["ls", "b"], ["diff", "<(ls a)", "<(ls b)"]]),
    ("sudo rm -rf /", [["rm", "-rf", "/"]]),
    ("sudo -u root env FOO=1 BAR=2 make install", [["make", "install"]]),
    ("FOO=1 make", [["make"]]),
    ("nohup timeout 5 nice -n 10 ./run.sh", [["./run.sh"]]),
    ("ls | xargs -0 rm -f", [["ls"], ["rm", "-f"]]),
    ("bash -c 'rm -rf ~'", [["rm", "-rf", "~"]]),
    ("sh -lc \"echo hi && id\"", [["echo", "hi"], ["id"]]),
    ("eval 'ls; pwd'", [["ls"], ["pwd"]]),
    ("sh <<EOF\nrm -rf /tmp/x\nEOF", [["rm", "-rf", "/tmp/x"]]),
    ("find . -name '*.pyc' -exec rm {} \\;", [["find", ".", "-name", "*.pyc", "-exec", "rm", "{}", ";"], ["rm", "{}"]]),
    ("if true; then rm a; else rm b; fi", [["true"], ["rm", "a"], ["rm", "b"]]),
    ("for f in *.txt; do cat \"$f\"; done", [["cat", "$f"]]),
    ("while read l; do echo $l; done < input", [["read", "l"], ["echo", "$l"], []]),  # [] holds the loop's `<`
    ("((x = 1 + 2))", []),                                     # bash arithmetic runs no program
    ("f() { rm -rf \"$1\"; }; f build", [["rm", "-rf", "$1"], ["f", "build"]]),
    ("cmd > out.txt 2>&1", [["cmd"]]),
    ("> empty.txt", [[]]),
    ("command -v git", [["command", "-v", "git"]]),           # -v only looks git up
    ("command git status", [["git", "status"]]),
    ("exec python3 app.py", [["python3", "app.py"]]),
]


@pytest.mark.parametrize(("line", "expected"), CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_programs_a_line_starts(line: str, expected: list[list[str]]) -> None:
    found = split_commands(line)
    assert [list(c.argv) for c in found] == expected
    assert not any(c.parse_error for c in found)


def test_wrappers_constructs_and_pipes_are_recorded() -> None:
    (inner,) = split_commands("sudo env X=1 bash -c 'rm -rf ~'")
    assert inner.wrappers == ("sudo", "env", "bash -c") and inner.construct == "-c" and inner.name == "rm"
    curl, shell = split_commands("curl x | sudo bash")
    assert curl.pipes_to and shell.piped_from and curl.pipeline == shell.pipeline and shell.wrappers == ("sudo",)
    sub, outer = split_commands("bash <(curl -s x)")
    assert sub.construct == "<(" and sub.parent == "bash" and outer.name == "bash"
    (found,) = split_commands("/usr/bin/rm -f a")
    assert found.name == "rm"


def test_redirections_and_tee_are_writes() -> None:
    (cmd,) = split_commands("make > build.log 2>&1 >> all.log")
    writes = [r for r in cmd.redirects if r.writes]
    assert [r.target for r in writes] == ["build.log", "all.log"] and writes[1].appends
    assert not Redirect("2>&", "1").writes
    _, tee = split_commands("ls | tee -a listing.txt")
    assert any(r.target == "listing.txt" and r.appends for r in tee.redirects)


@pytest.mark.parametrize("line", ["echo 'open", 'echo "open', "echo $(date", "(ls", "ls )", "echo `x"])
def test_unbalanced_input_is_flagged_not_raised(line: str) -> None:
    found = split_commands(line)
    assert any(c.parse_error for c in found)


def test_never_raises_on_arbitrary_input() -> None:
    alphabet = "ab $'\"`\\(){}[]|&;<>*?~#=\n\t-!"
    rng = random.Random(20261122)
    for _ in range(3000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for command in split_commands(line):
            assert isinstance(command.argv, tuple)
    deep = split_commands("( " * 200 + "rm x" + " )" * 200)   # deep nesting is no hiding place
    assert [c.argv for c in deep] == [("rm", "x")]
