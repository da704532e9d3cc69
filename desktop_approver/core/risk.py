"""How risky is a tool call? ``safe``, ``moderate`` or ``destructive``, with short human reasons.

The badge in the dialog, the tray and notifications comes from here, and so does what the
approve-all mode lets through (never a destructive call) and the ``risk = [...]`` field of
policy rules. Shell commands are parsed (:mod:`.shellparse`), never grepped: ``echo "rm -rf /"``
is safe, ``sudo bash -c 'rm -rf ~'`` is not.

Hints from the agent (MCP ``readOnlyHint``, ``destructiveHint``, ...) can raise the level and are
reported in ``hint_notes``, but they never lower it: an agent cannot talk its way to green.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable, Mapping

from .shellparse import SHELLS, SimpleCommand, split_commands

__all__ = ["LEVELS", "RiskAssessment", "assess", "assess_command", "max_level"]

LEVELS = ("safe", "moderate", "destructive")
SAFE, MODERATE, DESTRUCTIVE = LEVELS


def max_level(*levels: str) -> str:
    """The highest of ``levels`` (``safe`` when none)."""
    return max(levels, key=LEVELS.index, default=SAFE)


@dataclass(frozen=True)
class RiskAssessment:
    level: str
    reasons: tuple[str, ...] = ()
    hint_notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "reasons": list(self.reasons)}
        if self.hint_notes:
            out["hint_notes"] = list(self.hint_notes)
        return out


@dataclass
class _Findings:
    """Reasons collected with their levels; the assessment's level is the highest."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, level: str, reason: str) -> None:
        if (level, reason) not in self.items:
            self.items.append((level, reason))

    @property
    def level(self) -> str:
        return max_level(*(level for level, _ in self.items))

    def reasons(self) -> tuple[str, ...]:
        ordered = sorted(self.items, key=lambda item: -LEVELS.index(item[0]))
        seen: list[str] = []
        for level, reason in ordered:
            if level != SAFE and reason not in seen:
                seen.append(reason)
        return tuple(seen)


# -- tool families (names match case-insensitively, after an MCP ``mcp__server__`` prefix) ------

SHELL_TOOLS = frozenset({"bash", "shell", "sh", "run_command", "execute_command", "terminal", "run_shell_command",
                         "run_terminal_cmd", "exec_command", "local_shell", "command", "exec", "run"})
READ_TOOLS = frozenset({"read", "read_file", "read_text_file", "read_media_file", "read_multiple_files", "view",
                        "cat", "open", "get_file_info", "file_info", "glob", "grep", "search", "search_files",
                        "find_files", "list", "ls", "list_directory", "list_dir", "list_files",
                        "list_directory_with_sizes", "directory_tree", "list_allowed_directories",
                        "todowrite", "todoread", "think", "notebookread", "codebase_search", "view_file"})
WRITE_TOOLS = frozenset({"write", "write_file", "create_file", "file_write", "edit", "edit_file", "multiedit",
                         "multi_edit", "str_replace_editor", "str_replace_based_edit_tool", "apply_patch", "patch",
                         "apply_diff", "notebookedit", "create_directory", "mkdir", "append_file"})
MOVE_TOOLS = frozenset({"move", "move_file", "rename", "rename_file", "copy_file", "cp", "mv"})
DELETE_TOOLS = frozenset({"delete", "delete_file", "remove", "remove_file", "rm", "unlink", "delete_directory",
                          "remove_directory", "rmdir", "trash"})
NETWORK_TOOLS = frozenset({"webfetch", "web_fetch", "fetch", "websearch", "web_search", "http_request",
                           "browse", "browser", "curl", "http_get", "download"})

PATH_ARGS = ("file_path", "path", "filename", "filepath", "target", "destination", "source", "notebook_path",
             "directory", "dir")
SHELL_ARGS = ("command", "cmd", "script")
CWD_ARGS = ("cwd", "workdir", "working_directory")


def normalise_tool(tool: str) -> str:
    return tool.rsplit("__", 1)[-1].lower()


# -- paths ------------------------------------------------------------------------------------------

_SECRET_NAMES = re.compile(
    r"(^|/)(\.env(\.[\w.-]+)?|id_(rsa|dsa|ecdsa|ed25519)(_sk)?|[\w.-]*\.(pem|key|p12|pfx|kdbx|keystore|jks)"
    r"|\.netrc|\.git-credentials|\.pypirc|\.npmrc|\.pgpass|credentials(\.json)?|secrets?(\.[\w]+)?"
    r"|shadow|gshadow|master\.key|\.htpasswd|token(s)?\.json)$")
_SECRET_DIRS = ("/.ssh/", "/.gnupg/", "/.aws/", "/.kube/", "/.docker/", "/.config/gh/", "/.password-store/",
                "/.config/gcloud/", "/.azure/")
_STARTUP_FILES = re.compile(
    r"(^|/)\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin|cshrc|tcshrc"
    r"|kshrc|inputrc|xinitrc|xprofile|xsession(rc)?|pam_environment)$|/\.config/fish/|/\.config/autostart/"
    r"|/\.ssh/(authorized_keys|config|rc)$|/\.local/share/systemd/|/\.config/systemd/")
_SYSTEM_PREFIXES = ("/etc/", "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/boot/", "/opt/", "/var/", "/root/",
                    "/sys/", "/proc/")
_RAW_DEVICE = re.compile(r"^/dev/(sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d|md\d|dm-\d|mapper/|loop\d)")
_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/stdin",
                               "/dev/fd/1", "/dev/fd/2", "-"})


@dataclass(frozen=True)
class _Place:
    """Where a path points, judged against the agent's working directory."""

    raw: str
    resolved: str
    cwd: str | None

    @property
    def home(self) -> str:
        return os.path.expanduser("~")

    @property
    def outside(self) -> bool:
        if self.cwd is None:
            return False
        base = os.path.normpath(self.cwd)
        return not (self.resolved == base or self.resolved.startswith(base.rstrip("/") + "/"))

    @property
    def is_root_or_home(self) -> bool:
        return self.resolved in ("/", self.home, os.path.dirname(self.home)) or self.raw in ("/", "~", "~/", "$HOME",
                                                                                              "$HOME/", "/*", "~/*")

    @property
    def secret(self) -> bool:
        target = self.resolved + ("/" if not self.resolved.endswith("/") else "")
        return bool(_SECRET_NAMES.search(self.resolved)) or any(d in target for d in _SECRET_DIRS)

    @property
    def startup(self) -> bool:
        return bool(_STARTUP_FILES.search(self.resolved)) or self.resolved.startswith("/etc/profile") \
            or self.resolved.startswith("/etc/cron") or self.resolved.startswith("/var/spool/cron")

    @property
    def system(self) -> bool:
        return any(self.resolved.startswith(p) or self.resolved == p.rstrip("/") for p in _SYSTEM_PREFIXES)

    @property
    def raw_device(self) -> bool:
        return bool(_RAW_DEVICE.match(self.resolved))

    @property
    def git_internals(self) -> bool:
        return "/.git/" in self.resolved + "/" and not self.resolved.endswith("/.gitignore")


def _place(path: str, cwd: str | None) -> _Place:
    text = path.strip()
    expanded = re.sub(r"^(\$HOME|\$\{HOME\})(?=/|$)", "~", text)
    expanded = os.path.expanduser(expanded)
    if not os.path.isabs(expanded):
        expanded = os.path.join(cwd, expanded) if cwd else os.path.join("/__cwd__", expanded)
    resolved = os.path.normpath(expanded)
    if resolved.startswith("//"):
        resolved = "/" + resolved.lstrip("/")
    if cwd is None and resolved.startswith("/__cwd__"):
        return _Place(text, resolved.replace("/__cwd__", ".", 1), None)
    return _Place(text, resolved, cwd)


def _judge_write(place: _Place, findings: _Findings, verb: str = "writes", generic: bool = True) -> None:
    """What writing (or creating, truncating) ``place`` means; ``generic`` adds a plain
    "writes files" reason for an ordinary place inside the working directory."""
    if place.raw in _HARMLESS_DEVICES or place.resolved in _HARMLESS_DEVICES:
        return
    if place.raw_device:
        findings.add(DESTRUCTIVE, "writes to a raw disk device")
    elif place.startup:
        findings.add(DESTRUCTIVE, "changes shell startup or login files")
    elif place.secret:
        findings.add(DESTRUCTIVE, f"{verb} a secrets or key file")
    elif place.system:
        findings.add(DESTRUCTIVE, "writes to system files")
    elif place.git_internals:
        findings.add(DESTRUCTIVE, "writes inside .git (hooks, config, history)")
    elif place.outside:
        findings.add(MODERATE, "writes outside the working directory")
    elif generic:
        findings.add(MODERATE, f"{verb} files")


def _judge_delete(place: _Place, findings: _Findings, recursive: bool) -> None:
    before = len(findings.items)
    if place.is_root_or_home or place.raw.rstrip("/") in ("", "*", "/*", "~/*", ".", "..") and recursive:
        findings.add(DESTRUCTIVE, "deletes the home, root or whole working directory")
    if recursive:
        findings.add(DESTRUCTIVE, "deletes recursively")
    if place.outside or place.system:
        findings.add(DESTRUCTIVE, "deletes outside the working directory")
    elif place.git_internals:
        findings.add(DESTRUCTIVE, "deletes inside .git")
    elif place.secret or place.startup:
        findings.add(DESTRUCTIVE, "deletes a key, secrets or startup file")
    elif len(findings.items) == before:
        findings.add(MODERATE, "deletes files")


def _judge_read(place: _Place, findings: _Findings) -> None:
    if place.raw in _HARMLESS_DEVICES or place.resolved in _HARMLESS_DEVICES or place.raw.startswith("<("):
        return
    if place.secret or place.resolved in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers"):
        findings.add(DESTRUCTIVE, "reads a secrets file")
    elif place.outside and place.cwd is not None:
        findings.add(MODERATE, "reads outside the working directory")


# -- hidden characters ---------------------------------------------------------------------------

_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad\u180e]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LONG_SPACES = re.compile(r"[ \t]{40,}\S")


def _hidden(text: str, findings: _Findings, in_command: bool) -> None:
    level = DESTRUCTIVE if in_command else MODERATE
    if _BIDI.search(text):
        findings.add(level, "contains a bidi override (text reads differently than it runs)")
    if _INVISIBLE.search(text):
        findings.add(level, "contains zero-width characters")
    if "\x1b" in text:
        findings.add(level, "contains terminal escape sequences")
    elif _CONTROL.search(text.replace("\r\n", "\n")) and in_command:
        findings.add(level, "contains control characters")
    if in_command and _LONG_SPACES.search(text):
        findings.add(level, "hides a tail after a long run of spaces")


def _lookalike(name: str) -> bool:
    return any(ord(ch) > 127 for ch in name)


# -- commands ------------------------------------------------------------------------------------

READ_ONLY_COMMANDS = frozenset({
    "ls", "ll", "la", "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "find", "fd", "pwd", "echo", "printf", "wc", "sort", "uniq", "diff", "cmp", "comm", "stat", "file", "which",
    "whereis", "type", "whoami", "id", "date", "cal", "uname", "hostname", "tree", "du", "df", "ps", "top", "htop",
    "free", "uptime", "true", "false", "test", "[", "[[", "basename", "dirname", "realpath", "readlink", "cut", "tr",
    "column", "jq", "yq", "awk", "sed", "nl", "od", "xxd", "hexdump", "strings", "md5sum", "sha1sum", "sha256sum",
    "sha512sum", "cksum", "seq", "sleep", "env", "printenv", "locale", "man", "help", "tldr", "history", "lsof",
    "tac", "rev", "fold", "fmt", "expand", "paste", "join", "look", "getconf", "nproc", "arch", "lscpu", "lsblk",
    "ping", "cd", "pushd", "popd", "set", "export", "unset", "alias", "source", ".", "local", "read", "shift",
    "return", "exit", "break", "continue", "wait", "jobs", "declare", "typeset", "trap", "shopt", "hash", "umask",
    "tput", "clear", "base64", "zcat", "zless", "zgrep", "gzip", "ls-files", "numfmt", "sum", "expr", "bc",
})
NETWORK_COMMANDS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "ssh", "scp", "sftp", "rsync", "nc",
                              "ncat", "netcat", "socat", "telnet", "ftp", "lftp", "mosh", "gh", "aws", "gcloud",
                              "az", "kubectl", "helm", "terraform"})
FETCHERS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "nc", "ncat", "fetch"})
PRIVILEGE = frozenset({"sudo", "doas", "pkexec", "su", "run0"})
INTERPRETERS = {"python": ("-c",), "python2": ("-c",), "python3": ("-c",), "pypy": ("-c",), "pypy3": ("-c",),
                "node": ("-e", "--eval", "-p", "--print"), "deno": ("eval",), "bun": ("-e", "--eval"),
                "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",), "lua": ("-e",), "osascript": ("-e",)}
PACKAGE_MANAGERS = {
    "pip": ("install", "uninstall", "download"), "pip3": ("install", "uninstall", "download"),
    "uv": ("add", "install", "sync", "remove"), "poetry": ("add", "install", "remove", "update"),
    "npm": ("install", "i", "add", "ci", "uninstall", "remove", "update", "exec"), "npx": ("*",),
    "pnpm": ("add", "install", "i", "remove", "update", "dlx"), "yarn": ("add", "install", "remove", "dlx"),
    "bun": ("add", "install", "remove", "x"), "bunx": ("*",), "cargo": ("install", "add"), "gem": ("install",),
    "go": ("install", "get"), "apt": ("install", "remove", "purge", "upgrade"), "apt-get": ("install", "remove",
    "purge", "upgrade", "dist-upgrade"), "dnf": ("install", "remove"), "yum": ("install", "remove"),
    "pacman": ("-S", "-R", "-Syu", "-Rns"), "brew": ("install", "uninstall", "upgrade"), "snap": ("install",),
    "conda": ("install", "create", "remove"), "pipx": ("install", "run"), "composer": ("require", "install"),
}
_INLINE_DELETE = re.compile(r"rmtree|os\.remove|os\.unlink|\.unlink\(|os\.rmdir|removedirs|fs\.rm|rmSync|unlinkSync"
                            r"|rimraf|File\.delete|FileUtils\.rm|rm_rf|\brm\s+-[a-zA-Z]*r")
_INLINE_SHELL = re.compile(r"os\.system|subprocess|child_process|execSync|spawnSync|\bsystem\s*\(|popen|`[^`]+`")
_INLINE_NETWORK = re.compile(r"urllib|requests\.|http\.client|socket\.|fetch\(|https?://|LWP::|Net::HTTP|axios")
_INLINE_WRITE = re.compile(r"open\([^)]*['\"][wa]|write_text|write_bytes|writeFile|\.write\(|File\.write")
_FORK_BOMB = re.compile(r"(\w+|:)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}")


def _flags(argv: Iterable[str]) -> set[str]:
    """Short and long options: ``-rf`` gives ``{"r", "f"}``, ``--force`` gives ``{"--force"}``."""
    out: set[str] = set()
    for word in argv:
        if word.startswith("--"):
            out.add(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            out.update(word[1:])
    return out


def _operands(argv: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    options_done = False
    for word in argv[1:]:
        if word == "--" and not options_done:
            options_done = True
        elif options_done or not word.startswith("-") or word == "-":
            out.append(word)
    return out


def assess_command(command: str | list[str], cwd: str | None = None) -> RiskAssessment:
    """The risk of a shell command line (a string, or an argv list run without a shell)."""
    findings = _Findings()
    _command_findings(command, cwd, findings)
    return RiskAssessment(findings.level, findings.reasons())


def _command_findings(command: str | list[str] | Any, cwd: str | None, findings: _Findings, depth: int = 0) -> None:
    if isinstance(command, list):
        words = [str(w) for w in command]
        if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in SHELLS and words[1] in ("-c", "-lc", "-ic", "-cl"):
            command = words[2]
        else:
            command = shlex.join(words)
    if not isinstance(command, str):
        findings.add(MODERATE, "the command is not text")
        return
    _hidden(command, findings, in_command=True)
    if _FORK_BOMB.search(command):
        findings.add(DESTRUCTIVE, "fork bomb (exhausts the machine)")
    commands = split_commands(command)
    if "((" in command and depth == 0:
        # bash reads `((...))` as arithmetic, but sh (dash) reads nested subshells and runs them:
        # what would be destructive in sh counts too (`((count++))` stays harmless).
        as_sh = command
        while "((" in as_sh:
            as_sh = as_sh.replace("((", "( (")
        in_sh = _Findings()
        _command_findings(as_sh, cwd, in_sh, depth + 1)
        for level, reason in in_sh.items:
            if level == DESTRUCTIVE:
                findings.add(level, reason)
    if any(c.parse_error for c in commands):
        findings.add(MODERATE, "could not be parsed cleanly; check it by eye")
    pipelines: dict[int, list[SimpleCommand]] = {}
    for simple in commands:
        pipelines.setdefault(simple.pipeline, []).append(simple)
    for simple in commands:
        _simple_findings(simple, cwd, findings, pipelines.get(simple.pipeline, []), depth, commands)


def _simple_findings(cmd: SimpleCommand, cwd: str | None, findings: _Findings, pipeline: list[SimpleCommand],
                     depth: int, everything: list[SimpleCommand]) -> None:
    for redirect in cmd.redirects:
        if redirect.writes:
            _judge_write(_place(redirect.target, cwd), findings)
        elif redirect.op in ("<", "0<") and redirect.target:
            _judge_read(_place(redirect.target, cwd), findings)
    if any(w in PRIVILEGE for w in cmd.wrappers):
        findings.add(DESTRUCTIVE, "privilege escalation (sudo)")
    if "xargs" in cmd.wrappers and cmd.name in ("rm", "shred", "unlink", "rmdir"):
        findings.add(DESTRUCTIVE, "deletes many files (xargs)")
    if cmd.construct == "-exec" and cmd.name in ("rm", "shred", "unlink", "rmdir"):
        findings.add(DESTRUCTIVE, "deletes many files (find -exec)")
    if not cmd.argv:
        return
    name = cmd.name
    if _lookalike(name):
        findings.add(DESTRUCTIVE, f"the program name {name!r} uses non-ASCII look-alike characters")
        return
    if name in PRIVILEGE:
        findings.add(DESTRUCTIVE, "privilege escalation (sudo)")
        return
    if name in SHELLS or name == "eval":
        _shell_findings(cmd, cwd, findings, pipeline, depth, everything)
        return
    handler = _HANDLERS.get(name)
    if handler is not None:
        handler(cmd, cwd, findings)
        return
    if name in INTERPRETERS:
        _interpreter_findings(cmd, findings)
        return
    if name in PACKAGE_MANAGERS and _package_findings(cmd, findings):
        return
    if name in NETWORK_COMMANDS:
        _network_findings(cmd, cwd, findings)
        return
    if name in READ_ONLY_COMMANDS:
        _read_only_findings(cmd, cwd, findings)
        return
    findings.add(MODERATE, f"runs {name}")


def _shell_findings(cmd: SimpleCommand, cwd: str | None, findings: _Findings, pipeline: list[SimpleCommand],
                    depth: int, everything: list[SimpleCommand]) -> None:
    """A shell reading a script from stdin or ``<(...)``: what feeds it decides."""
    if any(w in ("-c",) for w in cmd.argv[1:2]) or cmd.name == "eval":
        return  # the inner script was already split into its own commands
    operands = _operands(cmd.argv)
    if operands and operands[0].startswith("<("):
        feeders = [c for c in everything if c.construct == "<(" and c.parent == cmd.argv[0]]
        if any(c.name in FETCHERS for c in feeders):
            findings.add(DESTRUCTIVE, "pipes a download into a shell")
        else:
            findings.add(DESTRUCTIVE, "runs a script produced on the fly")
        return
    if operands and not cmd.piped_from:
        findings.add(MODERATE, f"runs the shell script {operands[0]}")
        return
    if cmd.piped_from or any(r.op.startswith("<(") for r in cmd.redirects):
        sources = [c for c in pipeline if c is not cmd and c.pipes_to]
        if any(c.name in FETCHERS for c in sources):
            findings.add(DESTRUCTIVE, "pipes a download into a shell")
            return
        bodies = [r.body for c in sources for r in c.redirects if r.body]
        if bodies and depth < 3:
            for body in bodies:
                _command_findings(body, cwd, findings, depth + 1)
            return
        findings.add(DESTRUCTIVE, "pipes unseen text into a shell")
        return
    findings.add(MODERATE, f"starts a {cmd.name} shell")


def _rm(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    flags = _flags(cmd.argv[1:])
    recursive = bool(flags & {"r", "R", "--recursive"})
    targets = _operands(cmd.argv) or ["(stdin)"]
    if cmd.name == "rmdir":
        recursive = False
    for target in targets:
        _judge_delete(_place(target, cwd), findings, recursive)
    if cmd.name == "shred":
        findings.add(DESTRUCTIVE, "overwrites files beyond recovery")
    if {"f", "--force"} & flags and not recursive and findings.level == MODERATE:
        findings.add(MODERATE, "deletes without asking (-f)")


def _find(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    argv = cmd.argv
    if "-delete" in argv:
        findings.add(DESTRUCTIVE, "deletes recursively (find -delete)")
        for root in _operands(argv)[:1]:
            place = _place(root, cwd)
            if place.outside or place.is_root_or_home:
                findings.add(DESTRUCTIVE, "deletes outside the working directory")
    for action in ("-exec", "-execdir", "-ok", "-okdir"):
        if action in argv:
            findings.add(MODERATE, "runs a command on every file found")
    for action in ("-fprint", "-fprintf", "-fls"):
        if action in argv:
            findings.add(MODERATE, "writes files")


def _git(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    argv = list(cmd.argv[1:])
    while argv and argv[0] in ("-C", "-c", "--git-dir", "--work-tree"):
        argv = argv[2:]
    while argv and argv[0].startswith("-"):
        argv = argv[1:]
    sub = argv[0] if argv else ""
    rest = argv[1:]
    flags = _flags(rest)
    if sub in ("status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "ls-tree", "describe", "shortlog",
               "grep", "reflog", "cat-file", "whatchanged", "name-rev", "help", "version", "", "check-ignore"):
        return
    if sub == "push":
        forced = flags & {"f", "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "d"} \
            or any(r.startswith("+") or r.startswith(":") for r in _operands(("push", *rest)))
        if forced:
            findings.add(DESTRUCTIVE, "force-pushes or deletes remote history")
        findings.add(MODERATE, "publishes commits (network access)")
    elif sub == "clean" and flags & {"f", "--force"}:
        findings.add(DESTRUCTIVE, "deletes untracked files (git clean)" + (" including ignored ones" if "x" in flags
                                                                              or "X" in flags else ""))
    elif sub == "reset" and "--hard" in rest:
        findings.add(DESTRUCTIVE, "discards uncommitted changes (reset --hard)")
    elif sub in ("checkout", "restore") and ("--" in rest and "." in rest or "." in rest or flags & {"f", "--force"}
                                             or sub == "restore" and "--staged" not in rest):
        findings.add(DESTRUCTIVE, "discards uncommitted changes")
    elif sub == "branch" and flags & {"D", "d", "--delete"}:
        findings.add(DESTRUCTIVE if "D" in flags else MODERATE, "deletes a branch")
    elif sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        findings.add(DESTRUCTIVE, "throws away stashed changes")
    elif sub in ("filter-branch", "filter-repo") or sub == "rebase" and flags & {"i", "--interactive"}:
        findings.add(DESTRUCTIVE, "rewrites history")
    elif sub in ("fetch", "pull", "clone", "ls-remote", "submodule"):
        findings.add(MODERATE, "network access")
        if sub == "pull":
            findings.add(MODERATE, "changes the working tree")
    elif sub == "branch" and not rest or sub in ("branch", "tag", "remote", "config") and flags & {"l", "v", "--list"}:
        return
    elif sub == "config" and ("--get" in rest or len(rest) == 1):
        return
    else:
        findings.add(MODERATE, f"changes the repository (git {sub})")


def _chmod(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    flags = _flags(cmd.argv[1:])
    operands = _operands(cmd.argv)
    mode = operands[0] if operands else ""
    targets = operands[1:]
    recursive = bool(flags & {"R", "--recursive"})
    wide = bool(re.fullmatch(r"0?[0-7]?7[0-7]7", mode) or re.search(r"(a|o)\+[rwx]*w|^\+?[rwx]*w", mode)
                and ("o" in mode or "a" in mode))
    places = [_place(t, cwd) for t in targets]
    if wide:
        findings.add(DESTRUCTIVE if recursive or any(p.outside or p.system for p in places) else MODERATE,
                     "makes files writable by everyone")
    if recursive and any(p.is_root_or_home or p.system for p in places):
        findings.add(DESTRUCTIVE, f"changes ownership or permissions of system or home files ({cmd.name} -R)")
    elif any(p.system for p in places):
        findings.add(DESTRUCTIVE, "changes permissions of system files")
    elif re.search(r"[ugoa]*\+[rwx]*s|^[0-7]?[4-7][0-7]{3}$", mode) and cmd.name == "chmod":
        findings.add(DESTRUCTIVE, "sets a setuid/setgid bit")
    findings.add(MODERATE, "changes file permissions" if cmd.name == "chmod" else "changes file ownership")


def _dd(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    for word in cmd.argv[1:]:
        if word.startswith("of="):
            _judge_write(_place(word[3:], cwd), findings)
        elif word.startswith("if="):
            _judge_read(_place(word[3:], cwd), findings)


def _disk(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    findings.add(DESTRUCTIVE, "formats or repartitions a disk")


def _power(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    findings.add(DESTRUCTIVE, "shuts down or reboots the machine")


def _kill(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    operands = _operands(cmd.argv)
    if cmd.name == "kill" and any(o in ("1", "-1") for o in operands) or "-1" in cmd.argv[1:]:
        findings.add(DESTRUCTIVE, "kills every process (or init)")
    findings.add(MODERATE, "stops processes")


def _copy_move(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    operands = _operands(cmd.argv)
    flags = _flags(cmd.argv[1:])
    if "t" in flags or "--target-directory" in flags:
        destination = next((cmd.argv[i + 1] for i, w in enumerate(cmd.argv[:-1]) if w in ("-t",)), None)
        sources = operands
    else:
        destination = operands[-1] if len(operands) >= 2 else None
        sources = operands[:-1]
    for source in sources:
        place = _place(source, cwd)
        _judge_read(place, findings)
        if cmd.name == "mv" and (place.is_root_or_home or place.system):
            findings.add(DESTRUCTIVE, "moves system or home directories")
    if destination == "/dev/null":
        findings.add(DESTRUCTIVE, "moves files into /dev/null (deletes them)")
    elif destination is not None:
        _judge_write(_place(destination, cwd), findings, "writes", generic=False)
    findings.add(MODERATE, "moves files" if cmd.name == "mv" else "copies files")


def _truncate(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    findings.add(DESTRUCTIVE, "empties files (truncate)")
    for target in _operands(cmd.argv):
        _judge_write(_place(target, cwd), findings)


def _writers(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    """Programs whose operands are files they write: tee, touch, mkdir, ln, install."""
    for target in _operands(cmd.argv)[-1:] if cmd.name in ("ln", "install") else _operands(cmd.argv):
        _judge_write(_place(target, cwd), findings)
    if cmd.name == "mkdir":
        findings.add(MODERATE, "creates directories")


def _sed(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    if any(w == "-i" or w.startswith("-i") or w.startswith("--in-place") for w in cmd.argv[1:]):
        for target in _operands(cmd.argv)[1:]:
            _judge_write(_place(target, cwd), findings, "edits")
        findings.add(MODERATE, "edits files in place")
    else:
        _read_only_findings(cmd, cwd, findings)


def _crontab(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    if "-r" in cmd.argv:
        findings.add(DESTRUCTIVE, "deletes every scheduled job (crontab -r)")
    elif len(cmd.argv) > 1 and "-l" not in cmd.argv:
        findings.add(DESTRUCTIVE, "installs scheduled jobs (persistence)")


def _systemctl(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    verbs = [w for w in cmd.argv[1:] if not w.startswith("-")]
    verb = verbs[0] if verbs else ""
    if verb in ("status", "list-units", "list-unit-files", "show", "cat", "is-active", "is-enabled", ""):
        return
    if verb in ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate"):
        findings.add(DESTRUCTIVE, "shuts down or reboots the machine")
    elif verb in ("mask", "disable", "stop", "kill"):
        findings.add(DESTRUCTIVE if "--user" not in cmd.argv else MODERATE, "stops or disables services")
    else:
        findings.add(MODERATE, "changes services")


def _docker(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    words = [w for w in cmd.argv[1:] if not w.startswith("-")]
    sub = " ".join(words[:2])
    if words[:1] in (["rm"], ["rmi"]) or sub in ("system prune", "volume rm", "volume prune", "image prune",
                                                   "container prune", "network rm", "compose down"):
        findings.add(DESTRUCTIVE, "deletes containers, images or volumes")
    elif words[:1] in (["ps"], ["images"], ["logs"], ["inspect"], ["version"], ["info"]):
        return
    elif "--privileged" in cmd.argv or any("/:/" in w or w.startswith("/:") for w in cmd.argv):
        findings.add(DESTRUCTIVE, "runs a privileged container or mounts the host root")
    else:
        findings.add(MODERATE, f"runs {cmd.name} {words[0] if words else ''}".strip())


def _sql(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    text = " ".join(cmd.argv[1:])
    if re.search(r"\b(drop\s+(table|database|schema)|truncate\s+table|delete\s+from\s+\w+\s*(;|$))", text, re.I):
        findings.add(DESTRUCTIVE, "drops or empties database tables")
    findings.add(MODERATE, f"runs {cmd.name} (database access)")


def _interpreter_findings(cmd: SimpleCommand, findings: _Findings) -> None:
    options = INTERPRETERS[cmd.name]
    code = next((cmd.argv[i + 1] for i, w in enumerate(cmd.argv[:-1]) if w in options), None)
    if code is None:
        modules = [cmd.argv[i + 1] for i, w in enumerate(cmd.argv[:-1]) if w == "-m"]
        if modules and modules[0] in ("http.server", "SimpleHTTPServer"):
            findings.add(MODERATE, "serves files over the network")
        elif modules and modules[0] in ("pip",):
            findings.add(MODERATE, "installs packages")
        elif modules and modules[0] in ("pytest", "unittest", "mypy", "ruff", "black", "flake8", "pylint"):
            findings.add(MODERATE, "runs project code or tools")
        elif any(w in ("--version", "-V") for w in cmd.argv[1:]):
            return
        else:
            findings.add(MODERATE, f"runs a {cmd.name} program")
        return
    _hidden(code, findings, in_command=True)
    if _INLINE_DELETE.search(code):
        findings.add(DESTRUCTIVE, "deletes files from inline code" + (" recursively" if re.search(
            r"rmtree|rm_rf|rimraf|recursive|-[a-zA-Z]*r", code) else ""))
    if _INLINE_SHELL.search(code):
        findings.add(MODERATE, "inline code starts other programs")
    if _INLINE_NETWORK.search(code):
        findings.add(MODERATE, "network access")
    if _INLINE_WRITE.search(code):
        findings.add(MODERATE, "inline code writes files")
    findings.add(MODERATE, f"runs inline {cmd.name} code")


def _package_findings(cmd: SimpleCommand, findings: _Findings) -> bool:
    words = [w for w in cmd.argv[1:] if not w.startswith("--")]
    verbs = PACKAGE_MANAGERS[cmd.name]
    if "*" in verbs or (words and words[0] in verbs):
        verb = words[0] if words else ""
        if verb in ("uninstall", "remove", "purge", "-R", "-Rns"):
            findings.add(MODERATE, "removes packages")
        else:
            findings.add(MODERATE, "installs packages (runs their install scripts)")
        findings.add(MODERATE, "network access")
        if cmd.name in ("apt", "apt-get", "dnf", "yum", "pacman", "snap"):
            findings.add(DESTRUCTIVE, "changes system packages")
        return True
    return False


def _network_findings(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    findings.add(MODERATE, "network access")
    argv = cmd.argv
    for i, word in enumerate(argv[:-1]):
        if word in ("-o", "--output", "-O", "--output-document"):
            _judge_write(_place(argv[i + 1], cwd), findings, "downloads into")
        if word in ("-d", "--data", "--data-binary", "-F", "--form", "-T", "--upload-file") and "@" in argv[i + 1]:
            path = argv[i + 1].split("@", 1)[1]
            place = _place(path, cwd)
            if place.secret:
                findings.add(DESTRUCTIVE, "uploads a secrets file")
            else:
                findings.add(MODERATE, "uploads a local file")
    if cmd.name in ("scp", "rsync"):
        if "--delete" in argv:
            findings.add(DESTRUCTIVE, "deletes files at the destination (rsync --delete)")
        for operand in _operands(argv):
            if ":" not in operand:
                _judge_read(_place(operand, cwd), findings)
    if cmd.name in ("kubectl", "helm", "terraform", "aws", "gcloud", "az"):
        if re.search(r"\b(delete|destroy|rm|uninstall|terminate)", " ".join(argv[1:])):
            findings.add(DESTRUCTIVE, "deletes cloud or cluster resources")


def _read_only_findings(cmd: SimpleCommand, cwd: str | None, findings: _Findings) -> None:
    if cmd.name in ("echo", "printf", "true", "false", "test", "[", "[[", "export", "set", "seq", "sleep", "expr",
                    "date", "cd", "local", "declare", "read", "alias", "unset", "exit", "return"):
        return
    if cmd.name in ("env", "printenv"):
        findings.add(SAFE, "prints the environment")
        return
    if cmd.name in ("source", "."):
        findings.add(MODERATE, "runs a script in the current shell")
        return
    operands = _operands(cmd.argv)
    if cmd.name in ("grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "jq", "yq", "sed"):
        operands = operands[1:]  # the first is the pattern or program, not a path
    for operand in operands:
        if "/" in operand or operand.startswith(".") or "." in operand:
            _judge_read(_place(operand, cwd), findings)
    if cmd.name == "awk" and re.search(r"system\s*\(|print\s*>|\|\s*\"", " ".join(cmd.argv[1:])):
        findings.add(MODERATE, "awk program runs commands or writes files")


_HANDLERS = {
    "rm": _rm, "rmdir": _rm, "shred": _rm, "unlink": _rm, "srm": _rm, "trash": _rm, "trash-put": _rm,
    "find": _find, "git": _git, "chmod": _chmod, "chown": _chmod, "chgrp": _chmod, "dd": _dd,
    "mkfs": _disk, "fdisk": _disk, "sfdisk": _disk, "parted": _disk, "wipefs": _disk, "mkswap": _disk,
    "gdisk": _disk, "sgdisk": _disk, "cryptsetup": _disk, "shutdown": _power, "reboot": _power, "halt": _power,
    "poweroff": _power, "init": _power, "kill": _kill, "pkill": _kill, "killall": _kill, "cp": _copy_move,
    "mv": _copy_move, "truncate": _truncate, "tee": _writers, "touch": _writers, "mkdir": _writers,
    "ln": _writers, "install": _writers, "sed": _sed, "crontab": _crontab, "systemctl": _systemctl,
    "docker": _docker, "podman": _docker, "psql": _sql, "mysql": _sql, "sqlite3": _sql,
}
_HANDLERS.update({f"mkfs.{fs}": _disk for fs in ("ext2", "ext3", "ext4", "xfs", "btrfs", "vfat", "fat", "ntfs",
                                                 "exfat")})


# -- tool calls ----------------------------------------------------------------------------------

def _strings(value: Any, limit: int = 2000) -> Iterable[str]:
    """Every string inside ``value`` (bounded), for the hidden-character check."""
    stack = [value]
    seen = 0
    while stack and seen < limit:
        item = stack.pop()
        seen += 1
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _first(args: Mapping[str, Any], names: Iterable[str]) -> Any:
    for name in names:
        if name in args and args[name] not in (None, ""):
            return args[name]
    return None


def _paths(args: Mapping[str, Any]) -> list[str]:
    out = [args[n] for n in PATH_ARGS if isinstance(args.get(n), str) and args[n]]
    for key in ("paths", "files"):
        if isinstance(args.get(key), list):
            out.extend(p for p in args[key] if isinstance(p, str))
    edits = args.get("edits")
    if isinstance(edits, list):
        out.extend(e["path"] for e in edits if isinstance(e, Mapping) and isinstance(e.get("path"), str))
    return out


_PATCH_PATHS = re.compile(r"^(?:\*\*\* (?:Add|Update|Delete) File: |\+\+\+ (?:b/)?|--- (?:a/)?)(\S.*)$", re.M)


def assess(tool: str, args: Mapping[str, Any] | Any, *, cwd: str | None = None,
           hints: Mapping[str, Any] | None = None) -> RiskAssessment:
    """Classify one tool call. Never raises on odd input: anything not understood is moderate.

    Agents repeat calls (that is what session memory is for), so answers are cached by the call's
    canonical JSON and the home directory (``~`` paths); it depends on nothing else (no file is read).
    """
    try:
        key = json.dumps([tool, args, cwd, dict(hints or {}), os.path.expanduser("~")], sort_keys=True,
                         ensure_ascii=False)
    except (TypeError, ValueError):
        return _assess(tool, args, cwd, hints)
    return _assess_cached(key)


@lru_cache(maxsize=2048)
def _assess_cached(key: str) -> RiskAssessment:
    tool, args, cwd, hints, _home = json.loads(key)
    return _assess(tool, args, cwd, hints)


def _assess(tool: str, args: Mapping[str, Any] | Any, cwd: str | None,
            hints: Mapping[str, Any] | None) -> RiskAssessment:
    findings = _Findings()
    hints = dict(hints or {})
    if not isinstance(args, Mapping):
        args = {}
        findings.add(MODERATE, "arguments are not an object")
    name = normalise_tool(tool if isinstance(tool, str) else "")
    call_cwd = _first(args, CWD_ARGS)
    if isinstance(call_cwd, str) and call_cwd:
        if cwd and _place(call_cwd, cwd).outside:
            findings.add(MODERATE, "runs outside the working directory")
        cwd = os.path.normpath(os.path.join(cwd, call_cwd)) if cwd else call_cwd
    command = _first(args, SHELL_ARGS)
    if name in SHELL_TOOLS or (command is not None and isinstance(command, (str, list)) and
                               name not in READ_TOOLS | WRITE_TOOLS | DELETE_TOOLS and "edit" not in name):
        if command is None:
            findings.add(MODERATE, "a shell tool without a command argument")
        else:
            _command_findings(command, cwd, findings)
        for text in _strings({k: v for k, v in args.items() if k not in SHELL_ARGS}):
            _hidden(text, findings, in_command=False)
    else:
        _tool_findings(name, args, cwd, findings)
        for text in _strings(args):
            _hidden(text, findings, in_command=name not in WRITE_TOOLS)
    notes = _hint_findings(hints, findings)
    return RiskAssessment(findings.level, findings.reasons(), notes)


def _tool_findings(name: str, args: Mapping[str, Any], cwd: str | None, findings: _Findings) -> None:
    paths = _paths(args)
    if name in READ_TOOLS:
        for path in paths:
            _judge_read(_place(path, cwd), findings)
        return
    if name in DELETE_TOOLS:
        recursive = bool(args.get("recursive") or args.get("force")) or name in ("delete_directory",
                                                                                  "remove_directory")
        for path in paths or ["(unnamed)"]:
            _judge_delete(_place(path, cwd), findings, recursive)
        return
    if name in MOVE_TOOLS:
        source = _first(args, ("source", "src", "from", "old_path", "path"))
        target = _first(args, ("destination", "dest", "target", "to", "new_path"))
        if isinstance(source, str):
            _judge_read(_place(source, cwd), findings)
            _judge_write(_place(source, cwd), findings, "moves")
        if isinstance(target, str):
            _judge_write(_place(target, cwd), findings)
        findings.add(MODERATE, "moves or copies files")
        return
    if name in WRITE_TOOLS:
        patch = _first(args, ("patch", "diff", "input", "unified_diff"))
        if isinstance(patch, str):
            paths = paths + [p.strip() for p in _PATCH_PATHS.findall(patch) if p.strip() != "/dev/null"]
            if "*** Delete File:" in patch or "+++ /dev/null" in patch:
                findings.add(MODERATE, "deletes files")
        for path in paths or ["(unnamed)"]:
            _judge_write(_place(path, cwd), findings, "writes")
        return
    if name in NETWORK_TOOLS:
        findings.add(MODERATE, "network access")
        return
    findings.add(MODERATE, "unknown tool: its effects are not known")
    for path in paths:
        _judge_read(_place(path, cwd), findings)


def _hint_findings(hints: Mapping[str, Any], findings: _Findings) -> tuple[str, ...]:
    notes: list[str] = []
    if hints.get("destructive") is True:
        findings.add(DESTRUCTIVE, "the agent marks this tool destructive")
        notes.append("the agent says: destructive")
    if hints.get("read_only") is True:
        notes.append("the agent says: read-only (shown, not trusted)")
    if hints.get("open_world") is True:
        findings.add(MODERATE, "network access (the agent says open-world)")
        notes.append("the agent says: reaches the outside world")
    if hints.get("idempotent") is True:
        notes.append("the agent says: idempotent")
    return tuple(notes)
