"""split_commands: every program a command line runs, with how it was reached; never raises."""

from __future__ import annotations

import random

import pytest

from desktop_approver.core.calls.shellparse import Redirect, split_commands


def argvs(line: str) -> list[list[str]]:
    return [list(command.argv) for command in split_commands(line)]


@pytest.mark.parametrize(("line", "expected"), [
    ("ls -la", [["ls", "-la"]]),
    ("npm test && curl x | sh", [["npm", "test"], ["curl", "x"], ["sh"]]),
    ("a; b || c & d", [["a"], ["b"], ["c"], ["d"]]),
    ("(cd build && make)", [["cd", "build"], ["make"]]),
    ("{ echo a; echo b; }", [["echo", "a"], ["echo", "b"]]),
    ("echo $(whoami)", [["whoami"], ["echo", "$(whoami)"]]),
    ("echo `id -u`", [["id", "-u"], ["echo", "`id -u`"]]),
    ("diff <(ls a) <(ls b)", [["ls", "a"], ["ls", "b"], ["diff", "<(ls a)", "<(ls b)"]]),
    ("sudo -u root env FOO=1 nohup timeout 5 xargs rm", [["rm"]]),
    ("bash -c 'rm -rf ~'", [["rm", "-rf", "~"]]),
    ("eval 'echo hi; rm x'", [["echo", "hi"], ["rm", "x"]]),
    ("bash <<EOF\nrm -rf /tmp/x\nEOF\n", [["rm", "-rf", "/tmp/x"]]),
    ("find . -name '*.pyc' -exec rm {} \\;", [["find", ".", "-name", "*.pyc", "-exec", "rm", "{}", ";"], ["rm", "{}"]]),
    ("echo 'rm -rf /'", [["echo", "rm -rf /"]]),
    ("echo \"a $HOME\" b\\ c", [["echo", "a $HOME", "b c"]]),
    ("$'\\x72m' -rf /", [["rm", "-rf", "/"]]),
    ("ls # ; rm -rf /", [["ls"]]),
    ("FOO=1 BAR=2 cmd arg", [["cmd", "arg"]]),
    ("cat <<'EOF'\n$(rm x)\nEOF\n", [["cat"]]),             # a quoted here-doc does not expand
    ("cat <<EOF\n$(rm x)\nEOF\n", [["rm", "x"], ["cat"]]),
    ("> out.txt", [[]]),
])
def test_argv_table(line: str, expected: list[list[str]]) -> None:
    commands = split_commands(line)
    assert [list(c.argv) for c in commands] == expected
    assert all(c.parse_error is None for c in commands)


@pytest.mark.parametrize(("line", "wrappers", "construct", "parent"), [
    ("sudo -u root env FOO=1 nohup timeout 5 xargs rm", ("sudo", "sudo -u", "env", "nohup", "timeout", "xargs"), "",
     ""),
    ("sudo bash -c 'rm x'", ("sudo", "bash -c"), "-c", ""),
    ("eval 'rm x'", ("eval",), "eval", ""),
    ("bash <<EOF\nrm x\nEOF\n", ("bash <<",), "<<", "bash"),
    ("bash <<< 'rm x'", ("bash <<<",), "<<", "bash"),
    ("find . -exec rm {} +", (), "-exec", "find"),
    ("echo $(rm x)", (), "$(", "echo"),
    ("echo `rm x`", (), "`", "echo"),
    ("bash <(rm x)", (), "<(", "bash"),
    ("tee >(rm x)", (), ">(", "tee"),
    ("(rm x)", (), "(", ""),
    ("{ rm x; }", (), "{", ""),
])
def test_wrappers_and_constructs(line: str, wrappers: tuple[str, ...], construct: str, parent: str) -> None:
    rm = [c for c in split_commands(line) if c.name == "rm"]
    assert len(rm) == 1, split_commands(line)
    assert (rm[0].wrappers, rm[0].construct, rm[0].parent) == (wrappers, construct, parent)
    assert rm[0].depth == (0 if construct == "" else 1)


def test_nothing_is_unwrapped_when_the_wrapper_runs_nothing() -> None:
    assert argvs("sudo -l") == [["sudo", "-l"]]
    assert argvs("command -v rm") == [["command", "-v", "rm"]]


def test_assignments_and_pipes() -> None:
    first, second = split_commands("FOO=1 env BAR=2 curl x | sudo sh")
    assert first.assignments == ("FOO=1", "BAR=2") and first.pipes_to and not first.piped_from
    assert second.argv == ("sh",) and second.piped_from and second.pipeline == first.pipeline
    other = split_commands("a | b; c")
    assert other[0].pipeline == other[1].pipeline != other[2].pipeline


def test_redirections() -> None:
    (make,) = split_commands("make 2>&1 > log.txt 2>>err.txt < in.txt")
    assert make.redirects == (Redirect("2>&", "1"), Redirect(">", "log.txt"), Redirect("2>>", "err.txt"),
                              Redirect("<", "in.txt"))
    assert [r.writes for r in make.redirects] == [False, True, True, False]
    assert [r.appends for r in make.redirects] == [False, False, True, False]
    echo, tee = split_commands("echo hi | tee -a out.txt other")
    assert echo.redirects == () and tee.redirects == (Redirect("tee -a", "out.txt"), Redirect("tee -a", "other"))
    assert all(r.writes and r.appends for r in tee.redirects)


def test_bash_c_keeps_the_outer_pipe_and_redirections() -> None:
    inner = split_commands("curl x | bash -c 'cat > f'")
    assert inner[-1].argv == ("cat",) and inner[-1].piped_from
    assert Redirect(">", "f") in inner[-1].redirects


def test_here_document_body_is_kept() -> None:
    (cat,) = split_commands("cat <<-EOF > out\n\thello\n\tEOF\n")
    assert cat.redirects[0] == Redirect("<<-", "EOF", "hello\n") and cat.redirects[1] == Redirect(">", "out")


@pytest.mark.parametrize(("line", "error"), [
    ("echo 'unbalanced", "unbalanced single quote"),
    ('echo "unbalanced', "unbalanced double quote"),
    ("echo $'open", "unbalanced single quote"),
    ("(echo a", "unclosed parenthesis"),
    ("echo $(ls", "unbalanced parenthesis"),
    ("echo `ls", "unbalanced backquote"),
    ("echo )", "unexpected ')'"),
])
def test_parse_errors_are_reported_not_raised(line: str, error: str) -> None:
    errors = [c.parse_error for c in split_commands(line) if c.parse_error]
    assert errors and any(error in e for e in errors), split_commands(line)


def test_too_deep_nesting_is_an_error() -> None:
    line = "echo $(" * 30 + "rm x" + ")" * 30
    assert any(c.parse_error == "nested too deeply" for c in split_commands(line))


def test_non_strings_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        split_commands(b"ls")  # type: ignore[arg-type]


def test_never_raises_on_random_input() -> None:
    rng = random.Random(20261122)
    alphabet = "ab -|&;<>()$`'\"\\{}#\n\t=*?![]~/0123cehsx"
    words = ["bash -c ", "eval ", "sudo ", "<<EOF\n", "EOF\n", "$(", "${", "<(", "find -exec ", "case x in ",
             "for i in ", "do ", "done", "if ", "fi", "then ", "[[ ", " ]]", "f() {", "$'", "\\x7"]
    for _ in range(3000):
        parts = [rng.choice(words) if rng.random() < 0.3 else rng.choice(alphabet) for _ in range(rng.randint(0, 40))]
        line = "".join(parts)
        commands = split_commands(line)
        assert isinstance(commands, list)
        for command in commands:
            assert all(isinstance(word, str) for word in command.argv)


# -- the programs a line starts --------------------------------------------------------------------

PROGRAM_CASES: list[tuple[str, list[list[str]]]] = [
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
    ("for f in *.txt; do cat \"$f\"; done", [[], ["cat", "$f"]]),     # the loop sets f: an assignment
    ("while read l; do echo $l; done < input", [["read", "l"], ["echo", "$l"], []]),  # [] holds the loop's `<`
    ("((x = 1 + 2))", []),                                     # bash arithmetic runs no program
    ("f() { rm -rf \"$1\"; }; f build", [["rm", "-rf", "$1"], ["f", "build"]]),
    ("cmd > out.txt 2>&1", [["cmd"]]),
    ("> empty.txt", [[]]),
    ("command -v git", [["command", "-v", "git"]]),           # -v only looks git up
    ("command git status", [["git", "status"]]),
    ("exec python3 app.py", [["python3", "app.py"]]),
]


@pytest.mark.parametrize(("line", "expected"), PROGRAM_CASES, ids=[repr(c[0])[:40] for c in PROGRAM_CASES])
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


def test_a_line_past_the_reading_budget_is_not_read_at_all() -> None:
    from desktop_approver.core.calls.shellparse import MAX_READ_CHARS, MAX_READ_WORDS, over_budget

    for command, why in (("ls " + "a" * MAX_READ_CHARS, "KiB"), ("ls " + "a " * MAX_READ_WORDS, "words"),
                         ("bash -c '" + "bash -c \"ls a a\"; " * 700 + "'", "words")):
        found = split_commands(command)
        assert len(found) == 1 and over_budget(found[0]) and not found[0].argv, command[:40]
        assert found[0].parse_error is not None and why in found[0].parse_error
    assert not any(c.parse_error for c in split_commands("ls " + "a " * (MAX_READ_WORDS - 10)))


def test_one_budget_holds_every_command_line_of_a_call() -> None:
    from desktop_approver.core.calls.reading import read_call

    reading = read_call("Bash", {"commands": ["ls " + "a " * 100] * 40})
    assert reading.commands[0].programs[0].argv[:1] == ("ls",)
    assert reading.commands[-1].unread  # 40 lines of 100 words are more than one call may give


def test_a_word_maps_back_through_runs_of_its_characters() -> None:
    command = "bash -c 'echo x; rm -rf \"$HOME\"/y'"
    rm = next(c for c in split_commands(command) if c.name == "rm")
    assert rm.span is not None and command[rm.span[0]:rm.span[1]] == "rm"
    escaped = "bash -c $'ec\\x68o a; \\x72m b'"
    names = [c.name for c in split_commands(escaped)]
    assert names == ["echo", "rm"]
