"""Allow rules whose match is broader than it looks, for ``desktop-approver policy check`` to warn about.

A rule that names a whole tool allows any arguments of it; ``command = "git log *"`` reads like
"show the log" but also matches ``git log --output=~/.bashrc``. Since issue 19 an allow rule answers
only calls the app fully understands (:mod:`.automatic`), so these rules no longer let an unknown
option through; but what they say is still more than the person meant, and a rule whose ``risk``
names ``destructive`` accepts whatever it matches. The warnings say so, rule by rule; they never
stop the file from loading.

:data:`RUNS_OR_WRITES` is the short list of programs whose options or arguments run other programs,
write files or change things elsewhere: a trailing ``*`` after one of them hands those options to
the agent. It is kept here, beside the check, on purpose: the check must not depend on what the
reader's catalog happens to know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .globs import _has_glob
from .rules import Rule, _show

RUNS_OR_WRITES: dict[str, str] = {
    # version control and search
    "git": "--output, -c, --exec, an external diff or pager",
    "find": "-exec, -execdir, -ok, -fprint, -delete",
    "fd": "--exec, --exec-batch",
    "rg": "--pre",
    "sed": "-i, and the e and w commands",
    "awk": "system(), print > FILE", "gawk": "system(), print > FILE",
    "perl": "any code", "ruby": "any code", "python": "any code", "python3": "any code", "node": "any code",
    "deno": "any code", "bun": "any code", "php": "any code", "lua": "any code",
    "bash": "any command", "sh": "any command", "zsh": "any command", "fish": "any command", "dash": "any command",
    # programs that run programs
    "xargs": "the program it runs", "env": "the program it runs, -C", "sudo": "any command as root",
    "doas": "any command as root", "nice": "the program it runs", "nohup": "the program it runs",
    "timeout": "the program it runs", "time": "the program it runs", "watch": "the program it runs",
    "flock": "the program it runs", "parallel": "the programs it runs", "tmux": "any command",
    "screen": "any command", "ssh": "a command on another machine", "make": "the Makefile's recipes, -C",
    "uv": "run, tool run", "uvx": "any package", "poetry": "run", "pipx": "run", "npx": "any package",
    "npm": "--script-shell, run scripts, publish", "pnpm": "run scripts, dlx, publish",
    "yarn": "run scripts, dlx, publish", "cargo": "run, build scripts, publish", "go": "run, generate",
    "pip": "installs that run setup code", "pip3": "installs that run setup code",
    "man": "-P (the pager it runs)", "less": "+! and -o", "vim": ":! and writes", "vi": ":! and writes",
    "nvim": ":! and writes", "emacs": "any code",
    # files and the network
    "curl": "-o, -O, -K, --upload-file, -X DELETE", "wget": "-O, --post-file",
    "tar": "--to-command, --checkpoint-action, extracting over files", "rsync": "-e, --rsync-path, --delete",
    "cp": "any destination", "mv": "any destination", "tee": "any file", "dd": "of=", "install": "any destination",
    "ln": "any link", "rm": "any file", "chmod": "any file", "chown": "any file", "zip": "-TT",
    "unzip": "overwriting files",
    # containers, clusters and clouds
    "docker": "exec, run, push, rm", "podman": "exec, run, push, rm", "kubectl": "exec, apply, delete",
    "helm": "install, uninstall", "terraform": "apply, destroy", "pulumi": "up, destroy",
    "aws": "s3 rm, secrets, any API call", "gcloud": "any API call", "az": "any API call",
    # found by issue 19's red team: outputs, argument files, code they fetch or run, data they send
    "sqlite3": ".shell, .system, .output, -cmd, -init", "duckdb": ".shell, .output, COPY TO",
    "psql": "\\!, \\o, -c", "mysql": "\\!, --init-command",
    "xxd": "a second operand it writes (-r)", "uniq": "a second operand it writes",
    "jar": "c/u modes write the archive named first", "sort": "-o", "split": "the files it writes",
    "csplit": "the files it writes", "gzip": "-c > FILE, files it replaces", "patch": "the files it changes",
    "truncate": "any file", "touch": "any file", "mkdir": "any folder", "nc": "what it is fed, -e, -c, -l",
    "ncat": "what it is fed, -e, -c, -l", "socat": "EXEC:, SYSTEM:, files", "http": "POST, DELETE, @FILE",
    "xh": "POST, DELETE, @FILE", "yq": "-i, load(), strenv()", "jq": "env, $ENV",
    "gcc": "@FILE, -o, -wrapper", "cc": "@FILE, -o", "g++": "@FILE, -o", "clang": "@FILE, -o",
    "clang++": "@FILE, -o", "javac": "@FILE, -d", "java": "any code", "rustc": "@FILE, -o, --emit",
    "ld": "@FILE, -o", "mvn": "exec:exec, -Dexec.executable, deploy", "gradle": "any task", "ninja": "-f, -t",
    "cmake": "-P, -E, any script", "meson": "any build script", "alembic": "downgrade",
    "rails": "db:drop, runner", "rake": "any task", "prisma": "migrate reset, db push", "flyway": "clean",
    "ansible-playbook": "any task on other machines", "pre-commit": "hooks from other repositories",
    "git-lfs": "any file", "openssl": "-out, enc", "gpg": "--output, keys", "ssh-keygen": "-f, keys",
    "scp": "any destination, a copy off the machine", "sftp": "any file elsewhere", "rclone": "sync, delete",
    "crontab": "scheduled commands", "systemctl": "services", "kill": "-1 (every process)",
    "pkill": "every matching process", "killall": "every matching process",
}

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Breadth:
    """One rule, and how its match is broader than it looks."""

    rule: Rule
    warning: str

    def line(self, source: str) -> str:
        """``FILE:LINE: warning: rule 2: ...``, as an editor jumps to it."""
        where = f"{source}:{self.rule.line}" if self.rule.line else source
        return f"{where}: warning: {self.rule.label or f'rule {self.rule.index}'}: {self.warning}"


def broad_rules(rules: Iterable[Rule]) -> list[Breadth]:
    """Every allow rule whose match is broader than it looks, with the reason, in the file's order."""
    found: list[Breadth] = []
    for rule in rules:
        if rule.action != "allow":
            continue
        found += [Breadth(rule, warning) for warning in _warnings(rule)]
    return found


def _warnings(rule: Rule) -> list[str]:
    destructive = rule.risks is not None and "destructive" in rule.risks
    also = "; its risk names destructive, so it allows destructive calls too" if destructive else ""
    if rule.commands is None and rule.paths is None and rule.operations is None:
        if rule.tools is None:
            return [f"allows every call of every tool, with any arguments{also}"]
        return [f"allows every call of {_tool_words(rule.tools)}, with any arguments{also}"]
    warnings = [_command_warning(pattern) for pattern in rule.commands or ()]
    if destructive:
        warnings.append('its risk names destructive: it allows destructive calls it matches, never asking')
    return [warning for warning in warnings if warning]


def _tool_words(tools: tuple[str, ...]) -> str:
    globbed = [tool for tool in tools if _has_glob(tool)]
    if globbed:
        return f"every tool matching {_show(tuple(globbed))}"
    return f"tool {_show(tools)}"


def _command_warning(pattern: str) -> str | None:
    words = pattern.split()
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words or words[0].startswith("*"):
        return f"command {pattern!r} matches every command"
    program = words[0].rsplit("/", 1)[-1]
    if _has_glob(program):
        return f"command {pattern!r} matches every program whose name fits {program!r}"
    if not pattern.endswith("*"):
        return None
    options = RUNS_OR_WRITES.get(program) or RUNS_OR_WRITES.get(re.sub(r"[\d.]+$", "", program))
    if options is None:
        return None
    return (f"command {pattern!r}: the * after {program} also matches its options that run programs or write "
            f"files ({options})")
