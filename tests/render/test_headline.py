"""One line about a call, its dangerous part first; the risky parts of a command found and placed."""

from __future__ import annotations

from desktop_approver.render.headline import dangerous_parts, headline, one_line, shorten

LONG = "echo " + "a " * 2500 + "; rm -rf ~/ --no-preserve-root"


def test_a_long_commands_dangerous_tail_comes_first() -> None:
    line = headline("Bash", {"command": LONG}, 64)
    assert line.startswith("rm -rf ~/ --no-preserve-root") and line.endswith("-character command)")
    assert len(line) <= 64


def test_short_or_calm_commands_read_as_written() -> None:
    assert headline("Bash", {"command": "ls && git push --force origin main"}) == "ls && git push --force origin main"
    calm = headline("Bash", {"command": "echo " + "b " * 200}, 40)
    assert calm.startswith("echo b b") and calm.endswith("…") and len(calm) == 40


def test_names_are_one_line_and_short() -> None:
    assert one_line("Read\nRisk: safe ✔") == "Read\\nRisk: safe ✔"
    assert shorten("x" * 500, 60) == "x" * 59 + "…" and shorten("short", 60) == "short"
    assert "\n" not in headline("Read\nRisk", {"path": "a\nb"})


def test_dangerous_parts_are_where_they_are_written() -> None:
    command = "./configure --prefix=/usr && rm -rf build/ ; ls"
    parts = {part.level: command[part.start:part.end] for part in dangerous_parts(command)}
    assert parts["destructive"] == "rm -rf build/"  # the whole command: its program and its paths
    assert "ls" not in parts.values()
