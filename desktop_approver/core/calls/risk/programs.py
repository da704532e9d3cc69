"""Shell command lines: each program judged by what it does with its options and operands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..grammar import parse
from ..reading import (
    PathUse,
    ShellRun,
    command_paths,
    hidden_in,
    read_command,
    resolve_path,
    secrets_in,
    working_dirs,
)
from ..reading import operands as _operands
from ..reading import option_flags as _flags
from ..shellparse import SHELLS, SimpleCommand
from .findings import DESTRUCTIVE, MODERATE, SAFE, Findings
from .forms import INTERPRETERS, git_subcommand, interpreter_of, only_reads, simulates
from .hidden import HIDDEN_REASONS, lookalike
from .places import Place, judge_read, judge_use, judge_write
from .understanding import catalog_effect

READ_ONLY_COMMANDS = frozenset({
    "ls", "ll", "la", "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "find", "fd", "pwd", "echo", "printf", "wc", "sort", "uniq", "diff", "cmp", "comm", "stat", "file", "which",
    "whereis", "type", "whoami", "id", "date", "cal", "uname", "hostname", "tree", "du", "df", "ps", "top", "htop",
    "free", "uptime", "true", "false", "test", "[", "[[", "basename", "dirname", "realpath", "readlink", "cut", "tr",
    "column", "jq", "yq", "awk", "sed", "nl", "od", "xxd", "hexdump", "strings", "md5sum", "sha1sum", "sha256sum",
    "sha512sum", "cksum", "seq", "sleep", "locale", "man", "help", "tldr", "history", "lsof", "tac", "rev", "fold",
    "fmt", "expand", "paste", "join", "look", "getconf", "nproc", "arch", "lscpu", "lsblk", "ping", "cd", "pushd",
    "popd", "set", "export", "unset", "alias", "local", "read", "shift", "return", "exit", "break", "continue",
    "wait", "jobs", "declare", "typeset", "trap", "shopt", "hash", "umask", "tput", "clear", "base64", "zcat",
    "zless", "zgrep", "numfmt", "sum", "expr", "bc", "exa", "eza", "lsd", "shasum", "b2sum", "groups", "w",
    "who", "last", "dmesg", "journalctl", "ss", "netstat", "ip", "ifconfig", "lsusb", "lspci", "vmstat", "iostat",
    "pgrep", "pstree", "getent", "dig", "nslookup", "host", "whois", "traceroute", "tracepath", "mount", "findmnt",
    "printenv", "env", "command", "compgen", "basenc", "iconv", "watch", "time", "source", ".",
})
NETWORK_COMMANDS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "ssh", "scp", "sftp", "rsync", "nc",
                              "ncat", "netcat", "socat", "telnet", "ftp", "lftp", "mosh", "gh", "aws", "gcloud",
                              "az", "kubectl", "helm", "terraform", "gsutil", "s3cmd", "rclone"})
FETCHERS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "nc", "ncat", "fetch"})
PRIVILEGE = frozenset({"sudo", "doas", "pkexec", "su", "run0"})
MULTI_CALL = frozenset({"busybox", "toybox"})
PACKAGE_MANAGERS = {
    "pip": ("install", "uninstall", "download"), "pip3": ("install", "uninstall", "download"),
    "uv": ("add", "install", "sync", "remove", "pip"), "poetry": ("add", "install", "remove", "update"),
    "npm": ("install", "i", "add", "ci", "uninstall", "remove", "update", "exec"), "npx": ("*",),
    "pnpm": ("add", "install", "i", "remove", "update", "dlx"), "yarn": ("add", "install", "remove", "dlx"),
    "bun": ("add", "install", "remove", "x"), "bunx": ("*",), "cargo": ("install", "add"), "gem": ("install",),
    "go": ("install", "get"), "apt": ("install", "remove", "purge", "upgrade"), "apt-get": ("install", "remove",
    "purge", "upgrade", "dist-upgrade"), "dnf": ("install", "remove"), "yum": ("install", "remove"),
    "pacman": ("-S", "-R", "-Syu", "-Rns"), "brew": ("install", "uninstall", "upgrade"), "snap": ("install",),
    "conda": ("install", "create", "remove"), "pipx": ("install", "run"), "composer": ("require", "install"),
}
PUBLISHERS: dict[str, tuple[str, ...]] = {
    "npm": ("publish", "unpublish", "deprecate", "dist-tag add", "dist-tag rm", "owner add", "access"),
    "pnpm": ("publish",), "yarn": ("publish", "npm publish"),
    "bun": ("publish",), "twine": ("upload",), "cargo": ("publish", "yank"), "gem": ("push", "yank"),
    "poetry": ("publish",), "uv": ("publish",), "flit": ("publish",), "hatch": ("publish",), "docker": ("push",),
    "podman": ("push",), "helm": ("push",), "dotnet": ("nuget push",), "mvn": ("deploy",), "gradle": ("publish",),
    "gh": ("release create", "release upload", "repo create", "gist create", "pr merge", "repo delete",
           "release delete"), "vsce": ("publish",), "ovsx": ("publish",), "pdm": ("publish",), "jf": ("rt upload",),
}
_INLINE_DELETE = re.compile(r"rmtree|os\.remove|os\.unlink|\.unlink\(|os\.rmdir|removedirs|fs\.rm|rmSync|unlinkSync"
                            r"|rimraf|File\.delete|FileUtils\.rm|rm_rf|\bunlink\b|\brmdir\b|\brm\s+-[a-zA-Z]*r"
                            r"|Remove-Item|\.delete\(\)|truncate\(|Deno\.remove|fs\.promises\.rm|\brm\(|rmdirSync"
                            r"|unlink_r|remove_dir_all|Files\.delete")
_INLINE_SHELL = re.compile(r"os\.system|subprocess|child_process|execSync|spawnSync|\bspawn\(|\bexec[lv]?p?e?\(|"
                           r"\bsystem\s*\(|popen|`[^`]+`|pty\.spawn|Runtime\.getRuntime|\bIO\.popen|%x\{|Start-Process")
_INLINE_NETWORK = re.compile(r"urllib|requests\.|http\.client|\bsocket\b|fetch\(|https?://|LWP::|Net::HTTP|axios"
                             r"|smtplib|ftplib|Invoke-WebRequest|IO::Socket|\bnet\.connect|\bhttp\.request")
_INLINE_SEND = re.compile(r"requests\.(post|put|patch|delete)|\bdata\s*=|\.send(all|to)?\(|smtplib|ftplib|method\s*[=:]"
                          r"\s*['\"](POST|PUT|PATCH|DELETE)|\bsocket\.socket|IO::Socket|net\.connect|\.connect\(\(|"
                          r"Invoke-RestMethod|-Method\s+(Post|Put)|curl_exec")
_INLINE_DECODE = re.compile(r"\b(exec|eval|compile)\s*\(|__import__|base64|b64decode|marshal\.loads|zlib\.decompress"
                            r"|codecs\.decode|\bFunction\(|fromCharCode|pickle\.loads")
_INLINE_WRITE = re.compile(r"open\([^)]*['\"][wa+]|write_text|write_bytes|writeFile|\.write\(|File\.write|shutil\.(copy"
                           r"|move)|os\.rename|os\.replace|os\.makedirs|mkdir")
# From the start of a word only (the lookbehind): from every letter of a long word the match would
# be tried again, and a 100 KB argument took seconds (quadratic), stalling the app's loop.
_FORK_BOMB = re.compile(r"(?<![\w:])(\w+|:)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}")
_GIT_PROGRAM_SETTINGS = re.compile(
    r"^(core\.(sshcommand|fsmonitor|pager|editor|hookspath|askpass|gitproxy|alternaterefscommand)|pager\..*"
    r"|alias\..*|(diff|merge|filter)\..*\.(command|driver|textconv|clean|smudge|process)|credential\.helper"
    r"|sequence\.editor|gpg\.program|gpg\..*\.program|uploadpack\.packobjectshook|protocol\..*|url\..*|include\.path"
    r"|includeif\..*)$", re.I)
_SQL_DESTRUCTIVE = re.compile(r"\b(drop\s+(table|database|schema|index|view|user|role)|truncate\b|(to|from)\s+"
                              r"program\b|load_extension|xp_cmdshell|into\s+(out|dump)file|alter\s+table\s+\S+"
                              r"\s+drop|delete\s+from\s+[\w.\"`\[\]]+\s*(;|$)|update\s+[\w.\"`\[\]]+\s+set\s+(?:(?!"
                              r"\bwhere\b).)*(;|$)|grant\s+all|drop\s+owned)", re.I | re.S)
_SQL_SECRET_COLUMNS = re.compile(r"\bselect\b(?:(?!\bfrom\b).)*\b\w*(password|passwd|secret|token|api_?key|"
                                 r"private_?key|access_?key|credential|otp_seed|totp)\w*\b(?:(?!\bfrom\b).)*\bfrom\b",
                                 re.I | re.S)
_SQL_CHANGE = re.compile(r"\b(insert|update|delete|create|alter|replace|merge|grant|revoke|vacuum|attach|rename)\b",
                         re.I)
METADATA = re.compile(r"169\.254\.169\.254|metadata\.google\.internal|fd00:ec2::254|100\.100\.100\.200")
# Addresses that post a message to people or trigger something elsewhere when data is sent to them.
WEBHOOK = re.compile(r"hooks\.slack\.com/|discord(app)?\.com/api/webhooks/|outlook\.office\.com/webhook|"
                      r"webhook\.office\.com/|/webhooks?(/|\?|$)|chat\.googleapis\.com/v1/spaces/.*/messages|"
                      r"api\.telegram\.org/bot|maker\.ifttt\.com/trigger|hooks\.zapier\.com/", re.I)
SECRET_ENV = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH)", re.I)
_SECRET_SEGMENT = re.compile(r"\w*(PASSWORD|PASSWD|TOKEN|SECRET|APIKEY|CREDENTIAL)S?|AUTH|KEY|KEYS|PAT|PRIVATE|PASS"
                             r"|COOKIE|DSN", re.I)


def secret_variable(name: str) -> bool:
    """Whether a variable's name says it holds a secret: a whole word of it is TOKEN, SECRET,
    PASSWORD, KEY, AUTH, ... (``GITHUB_TOKEN``, ``OPENAI_API_KEY``, ``PGPASSWORD``), not a name
    that merely contains the letters (``AUTHOR``, ``KEYBOARD``, ``SSH_AUTH_SOCK``)."""
    if name.upper().endswith(("_SOCK", "_SOCKET", "_FILE", "_PATH", "_ID")) and "SECRET" not in name.upper():
        return False
    words = [w for w in re.split(r"_+|(?<=[a-z])(?=[A-Z])", name) if w]
    return any(_SECRET_SEGMENT.fullmatch(w) for w in words)


_GREP_FILTERS = frozenset({"grep", "egrep", "fgrep", "rg"})


def _filtered_harmlessly(cmd: SimpleCommand, line: _Line) -> bool:
    """``env | grep PATH``: the listing goes through a filter that keeps only lines matching a
    pattern that names no secret (not inverted, not a pattern from a file)."""
    if not cmd.pipes_to:
        return False
    later = [c for c in line.programs if c.pipeline == cmd.pipeline and c.argv]
    at = next((i for i, c in enumerate(later) if c is cmd), -1)
    if at < 0 or at + 1 >= len(later):
        return False
    nxt = later[at + 1]
    if nxt.name not in _GREP_FILTERS:
        return False
    options = [w for w in nxt.argv[1:] if w.startswith("-")]
    if any(o in ("-v", "--invert-match", "-f", "--file", "-e", "--regexp") or o.startswith("-") and "v" in o[1:]
           and not o.startswith("--") for o in options):
        return False
    patterns = _operands(nxt.argv)[:1]
    return bool(patterns) and all(re.fullmatch(r"\^?[\w.-]+=?", p) and not secret_variable(p.strip("^=")) and
                                  not SECRET_ENV.search(p) and p.strip("^=") not in ("", ".") for p in patterns)


@dataclass
class _Line:
    """One command line being judged: its programs, and the context they share."""

    run: ShellRun
    cwd: str | None
    workspace: str | None
    findings: Findings
    depth: int = 0

    @property
    def programs(self) -> tuple[SimpleCommand, ...]:
        return self.run.programs


def command_findings(run: ShellRun, cwd: str | None, workspace: str | None, findings: Findings,
                      depth: int = 0) -> None:
    text = run.text
    if "{" in text and "&" in text and _FORK_BOMB.search(text):
        findings.add(DESTRUCTIVE, "fork bomb (exhausts the machine)")
    if "((" in text and depth == 0:
        # bash reads `((...))` as arithmetic, but sh (dash) reads nested subshells and runs them:
        # what would be destructive in sh counts too (`((count++))` stays harmless).
        as_sh = text
        while "((" in as_sh:
            as_sh = as_sh.replace("((", "( (")
        in_sh = Findings()
        command_findings(read_command(as_sh, run.key), cwd, workspace, in_sh, depth + 1)
        for level, reason in in_sh.items:
            if level == DESTRUCTIVE:
                findings.add(level, reason)
    if run.unread:
        findings.add(MODERATE, f"{run.parse_error}; check it by eye")
    elif run.parse_error:
        findings.add(MODERATE, "could not be parsed cleanly; check it by eye")
    line = _Line(run, cwd, workspace, findings, depth)
    pipelines: dict[int, list[SimpleCommand]] = {}
    for simple in run.programs:
        pipelines.setdefault(simple.pipeline, []).append(simple)
    if _runs_a_download(run.programs, cwd):
        findings.add(DESTRUCTIVE, "runs a file it has just downloaded (a download run in two steps)")
    for simple, here in zip(run.programs, working_dirs(run.programs, cwd), strict=True):
        # cd/pushd earlier in the line move the programs after them (risk and rules agree)
        _simple_findings(simple, line if here == cwd else replace(line, cwd=here), pipelines.get(simple.pipeline, []))


def _runs_a_download(programs: tuple[SimpleCommand, ...], cwd: str | None) -> bool:
    """``curl -o x.sh URL && sh x.sh`` (or ``wget -O``, ``curl -O``, then ``bash``, ``python``,
    ``source`` or ``./x.sh``): the second step runs what the first fetched."""
    fetched: set[str] = set()
    for program in programs:
        if program.name in FETCHERS:
            fetched.update(use.resolved for use in command_paths(program, cwd) if use.operation == "write")
            if {"-O", "--remote-name"} & set(program.argv) or any(re.fullmatch(r"-\w*O\w*", w) for w in
                                                                  program.argv[1:]) and program.name == "curl":
                fetched.update(resolve_path(url.rstrip("/").rsplit("/", 1)[-1], cwd) for url in program.argv[1:]
                               if re.match(r"[a-z]+://", url))
            continue
        if not fetched or not program.argv:
            continue
        runner = program.name in SHELLS or interpreter_of(program.name) or program.name in ("source", ".")
        targets = [program.argv[0]] + (_operands(program.argv)[:1] if runner else [])
        if any(resolve_path(t, cwd) in fetched for t in targets if not t.startswith("-")):
            return True
    return False


def _simple_findings(cmd: SimpleCommand, line: _Line, pipeline: list[SimpleCommand]) -> None:
    findings, cwd, workspace = line.findings, line.cwd, line.workspace
    if any(w in PRIVILEGE for w in cmd.wrappers):
        findings.add(DESTRUCTIVE, "privilege escalation (sudo)")
    for redirect in cmd.redirects:
        if "/dev/tcp/" in redirect.target or "/dev/udp/" in redirect.target:
            findings.add(DESTRUCTIVE, "opens a raw network connection (/dev/tcp): a reverse shell or exfiltration")
    if not cmd.argv:
        for use in command_paths(cmd, cwd):
            judge_use(use, workspace, findings)
        return
    name = cmd.name
    if name in MULTI_CALL and len(cmd.argv) > 1:
        _simple_findings(replace(cmd, argv=cmd.argv[1:], span=None), line, pipeline)
        return
    program = re.sub(r"^(\$HOME|\$\{HOME\})/", "~/", cmd.argv[0])
    if "$" in program or "`" in program:
        inner = [c for c in line.programs
                 if c.parent == cmd.argv[0] or c.construct in ("$(", "`") and c.name in FETCHERS]
        if any(c.name in FETCHERS for c in inner):
            findings.add(DESTRUCTIVE, "runs a downloaded script (the program comes from curl or wget)")
        else:
            findings.add(DESTRUCTIVE, f"runs a program named by a variable or substitution ({cmd.argv[0]})")
        return
    if lookalike(name):
        findings.add(DESTRUCTIVE, f"the program name {name!r} uses non-ASCII look-alike characters")
        return
    if name in PRIVILEGE:
        findings.add(DESTRUCTIVE, "privilege escalation (sudo)")
        return
    launched = _inner_of(cmd) if line.depth < 3 else None
    if launched:
        # what a launcher runs is judged as a command line of its own (issue 19: programs that run programs)
        command_findings(read_command(launched, line.run.key), cwd, workspace, findings, line.depth + 1)
    if "xargs" in cmd.wrappers and name in ("rm", "shred", "unlink", "rmdir"):
        findings.add(DESTRUCTIVE, "deletes files named by its input (xargs)")
    if cmd.construct == "-exec" and name in ("rm", "shred", "unlink", "rmdir"):
        findings.add(DESTRUCTIVE, "deletes every file found (find -exec)")
    if _prints_cluster_secret(cmd):
        findings.add(DESTRUCTIVE, "prints a credential (token or key) into the agent's context")
    dry = simulates(cmd) or only_reads(cmd)
    for use in command_paths(cmd, cwd):
        if dry and use.via == name:
            continue
        judge_use(use, workspace, findings)
    if dry:
        local = name == "helm" or name == "kubectl" and _subcommand(cmd.argv)[:1] in (["kustomize"], ["diff"],
                                                                                   ["explain"])
        if name in NETWORK_COMMANDS and not local and not simulates(cmd) and not {"--help", "-help", "--version",
                                                                               "-version"} & set(cmd.argv) \
                and cmd.argv[1:] != ("-h",):
            findings.add(MODERATE, "reads over the network")
        return
    if any("{}" in w for w in cmd.argv[:1]) or "xargs" in cmd.wrappers and name in SHELLS and any(
            "{}" in w for w in cmd.argv[1:]):
        findings.add(DESTRUCTIVE, "runs commands built from its input (xargs)")
        return
    if name in SHELLS or name == "eval" or name in ("source", ".") and _script_feed(cmd):
        _shell_findings(cmd, line, pipeline)
        return
    said = " ".join(_subcommand(cmd.argv) + [w for w in cmd.argv[1:] if w.startswith("-")])
    if any(said.startswith(verb) for verb in _CREDENTIAL_PRINTERS.get(name, ())) or name.startswith(
            "docker-credential-") and "get" in cmd.argv:
        findings.add(DESTRUCTIVE, "prints a credential (token or key) into the agent's context")
        return
    if name == "go" and _subcommand(cmd.argv)[:1] == ["clean"] and {"-modcache", "-cache", "-fuzzcache",
                                                                    "-testcache"} & set(cmd.argv) or \
            name in ("npm", "yarn", "pnpm") and _subcommand(cmd.argv)[:2] in (["cache", "clean"], ["store", "prune"]) \
            or name in ("pip", "pip3") and _subcommand(cmd.argv)[:2] in (["cache", "purge"], ["cache", "remove"]):
        findings.add(DESTRUCTIVE, "deletes a shared cache outside the working directory")
        return
    if name in ("npm", "pnpm", "yarn", "pip", "pip3", "poetry", "gem", "cargo") and _subcommand(cmd.argv)[:2] in (
            ["config", "set"], ["set", "config"]) and not any("project" in w for w in cmd.argv):
        findings.add(DESTRUCTIVE, "changes the user's package-manager settings (outside the working directory)")
        return
    tool, tool_argv = _launched(cmd.argv)
    publishes = PUBLISHERS.get(tool)
    if publishes and any(" ".join(_subcommand(tool_argv)).startswith(verb) for verb in publishes) or \
            tool in ("docker", "podman") and "--push" in tool_argv:
        findings.add(DESTRUCTIVE, "publishes (a release, a package or an image: cannot be taken back)")
        return
    handler = _HANDLERS.get(name)
    if handler is not None:
        handler(cmd, line)
        return
    if interpreter_of(name):
        _interpreter_findings(cmd, line)
        return
    if name in PACKAGE_MANAGERS and _package_findings(cmd, findings):
        return
    if name in NETWORK_COMMANDS:
        _network_findings(cmd, line)
        return
    if name in READ_ONLY_COMMANDS:
        _read_only_findings(cmd, line)
        return
    if not _quiet_in_catalog(cmd, line):
        findings.add(MODERATE, f"runs {name}")


def _quiet_in_catalog(cmd: SimpleCommand, line: _Line) -> bool:
    """A program the catalog reads fully and whose entry names no effect (``brew list``,
    ``mypy src``, ``dpkg -l``): its paths are judged already, and nothing else happens."""
    return catalog_effect(cmd, line.cwd) == ""


# Programs that run the command given after them: (name, subcommand words, where the command starts).
_RUNS_AFTER = {"aws-vault": "--", "doppler": "--", "op": "--", "infisical": "--", "dotenvx": "--", "chamber": "--",
               "sops": "--", "teller": "--", "flock": 2, "parallel": 1, "docker": "exec", "podman": "exec",
               "kubectl": "exec", "timeout": 2}


def _inner_of(cmd: SimpleCommand) -> str | None:
    """The command line a launcher runs: ``aws-vault exec prod -- CMD``, ``flock FILE CMD``,
    ``nix-shell --run CMD``, ``tmux new 'CMD'``, ``git submodule foreach CMD``, ``git rebase -x CMD``,
    ``docker exec CONTAINER CMD``, ``kubectl exec POD -- CMD``; None for any other program."""
    argv, name = cmd.argv, cmd.name
    words = [w for w in argv[1:] if not w.startswith("-")]
    if name == "nix-shell" or name == "nix" and "develop" in argv:
        return next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("--run", "--command", "-c")), None)
    if name == "tmux" and words[:1] in (["new"], ["new-session"], ["new-window"], ["send-keys"], ["split-window"]):
        return " ".join(words[1:]) or None
    if name == "git":
        sub, rest, _ = git_subcommand(argv)
        if sub == "submodule" and "foreach" in rest:
            return " ".join(rest[rest.index("foreach") + 1:]).strip() or None
        if sub == "rebase":
            return next((rest[i + 1] for i, w in enumerate(rest[:-1]) if w in ("-x", "--exec")), None) or next(
                (w.split("=", 1)[1] for w in rest if w.startswith("--exec=")), None)
        if sub == "bisect" and rest[:1] == ["run"]:
            return shlex.join(rest[1:]) or None
        return None
    how = _RUNS_AFTER.get(name)
    if how is None:
        return None
    if how == "--":
        return shlex.join(argv[argv.index("--") + 1:]) if "--" in argv else None
    if isinstance(how, int):
        return shlex.join(words[how - 1:]) if len(words) >= how else None
    if words[:1] == [how]:
        rest = list(argv[argv.index(how) + 1:])
        if "--" in rest:
            return shlex.join(rest[rest.index("--") + 1:])
        positional = [w for w in rest if not w.startswith("-")]
        return shlex.join(rest[rest.index(positional[0]) + 1:]) if positional else None
    return None


# Subcommands (with their options) that print a credential.
_CREDENTIAL_PRINTERS: dict[str, tuple[str, ...]] = {
    "gh": ("auth token", "auth status --show-token", "auth status -t"),
    "aws": ("configure get aws_secret_access_key", "configure get aws_session_token", "sts get-session-token",
            "ecr get-login-password", "configure export-credentials", "codeartifact get-authorization-token"),
    "gcloud": ("auth print-access-token", "auth print-identity-token", "auth application-default print-access-token"),
    "az": ("account get-access-token",), "kubectl": ("config view --raw", "create token"),
    "pass": ("show",), "op": ("read", "item get"), "vault": ("kv get", "read", "token create", "print token"),
    "bw": ("get password", "get item"), "doctl": ("auth token",),
    "git": ("credential fill", "credential-store get"), "glab": ("auth token",), "npm": ("token list", "token create"),
    "doppler": ("secrets get", "secrets download", "secrets"), "infisical": ("secrets get", "export"),
    "heroku": ("auth:token", "config:get"), "flyctl": ("secrets export",), "sops": ("-d", "--decrypt", "decrypt"),
}
# Secret managers whose read forms print a secret's value.
_CREDENTIAL_PRINTERS["aws"] += ("secretsmanager get-secret-value", "ssm get-parameter", "ssm get-parameters")
_CREDENTIAL_PRINTERS["gcloud"] += ("secrets versions",)
_CREDENTIAL_PRINTERS["az"] += ("keyvault secret",)


def _prints_cluster_secret(cmd: SimpleCommand) -> bool:
    """``kubectl get secret db -o yaml`` (or json, jsonpath, go-template): the values, not the names."""
    words = [w for w in cmd.argv[1:] if not w.startswith("-")]
    outputs = [w for w in cmd.argv[1:] if w.startswith(("-o", "--output"))]
    return cmd.name in ("kubectl", "oc") and words[:1] == ["get"] and any(
        w.startswith(("secret", "secrets/", "secret/")) for w in words[1:2]) and bool(outputs) and not any(
        o.endswith(("=name", "name", "=wide", "wide")) for o in outputs)


# Programs that run another tool named by their first operand: npx vsce publish runs vsce.
_LAUNCHERS = {"npx": 1, "bunx": 1, "uvx": 1, "pipx": 2, "pnpm": 2, "yarn": 2, "uv": 2, "poetry": 2, "hatch": 2,
              "pdm": 2}


def _launched(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The tool a command really runs, with its words: ``python -m twine upload`` is ``twine
    upload``, ``npx vsce publish`` is ``vsce publish``, ``./gradlew publish`` is ``gradle publish``."""
    name = argv[0].rsplit("/", 1)[-1]
    words = [w for w in argv[1:] if not w.startswith("-")]
    if interpreter_of(name) and "-m" in argv:
        at = argv.index("-m")
        return (argv[at + 1], argv[at + 1:]) if at + 1 < len(argv) else (name, argv)
    if name in _LAUNCHERS and words:
        verb_first = _LAUNCHERS[name] == 2
        if verb_first and words[0] in ("run", "exec", "dlx", "x", "tool") and len(words) > 1:
            return words[1], tuple(words[1:])
        if not verb_first:
            return words[0], tuple(words)
    if name in ("gradlew", "mvnw"):
        return name[:-1], argv
    return name, argv


def _script_feed(cmd: SimpleCommand) -> bool:
    """Whether ``source`` / an interpreter reads its code from a pipe or ``<(...)``."""
    operands = _operands(cmd.argv)
    return bool(operands and (operands[0].startswith("<(") or operands[0] in ("-", "/dev/stdin"))
                or not operands and cmd.piped_from)


def _subcommand(argv: tuple[str, ...]) -> list[str]:
    """The first two words the program reads as its subcommand and operands (an option's value is
    neither); for a program the grammar does not read, its first two words that are not options."""
    found = parse(argv)
    if found.known and not found.gaps:
        return [*found.subcommand, *found.operands][:2]
    return [w for w in argv[1:] if not w.startswith("-")][:2]


def _shell_findings(cmd: SimpleCommand, line: _Line, pipeline: list[SimpleCommand]) -> None:
    """A shell reading a script from stdin or ``<(...)``: what feeds it decides."""
    findings = line.findings
    if any(w in ("-c",) for w in cmd.argv[1:2]) or cmd.name == "eval":
        return  # the inner script was already split into its own commands
    if cmd.construct == ">(":
        findings.add(DESTRUCTIVE, "a shell runs what another program writes into it (tee >(sh))")
        return
    fed = [r.target for r in cmd.redirects if r.target.startswith("<(") or r.op.lstrip("0123456789") == "<<<"
           and ("$(" in r.target or "`" in r.target)]
    if fed:
        downloads = any(re.search(r"(^|[(`|;&\s])(curl|wget|fetch|http|xh|aria2c)\s", t) for t in fed)
        findings.add(DESTRUCTIVE, "pipes a download into a shell" if downloads else "runs a script produced on the fly")
        return
    operands = _operands(cmd.argv)
    if operands and operands[0].startswith("<("):
        feeders = [c for c in line.programs if c.construct == "<(" and c.parent in (cmd.argv[0], cmd.name)]
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
        if bodies and line.depth < 3:
            for body in bodies:
                command_findings(read_command(body, line.run.key), line.cwd, line.workspace, findings, line.depth + 1)
            return
        findings.add(DESTRUCTIVE, "pipes unseen text into a shell")
        return
    findings.add(MODERATE, f"starts a {cmd.name} shell")


def _rm(cmd: SimpleCommand, line: _Line) -> None:
    if not _operands(cmd.argv) and not cmd.piped_from:
        return
    if cmd.name == "shred":
        line.findings.add(DESTRUCTIVE, "overwrites files beyond recovery")
    if not _operands(cmd.argv):
        line.findings.add(DESTRUCTIVE, "deletes files named by its input")


def _find(cmd: SimpleCommand, line: _Line) -> None:
    argv = cmd.argv
    if "-delete" in argv:
        line.findings.add(MODERATE, "deletes the files it finds (find -delete)")
    for action in ("-exec", "-execdir", "-ok", "-okdir"):
        if action in argv:
            line.findings.add(MODERATE, "runs a command on every file found")
    for action in ("-fprint", "-fprintf", "-fls"):
        if action in argv:
            line.findings.add(MODERATE, "writes files")


def _harmless_pager(setting: str) -> bool:
    """``core.pager=cat`` (or ``less``, or empty): a pager setting that runs no other program."""
    key, _, value = setting.partition("=")
    harmless = ("", "cat", "less", "less -R", "less -FRX", "more")
    return (key.lower() == "core.pager" or key.lower().startswith("pager.")) and value.strip() in harmless


def _listing_flags(sub: str) -> set[str]:
    """Flags that make ``git branch``/``tag``/``remote``/``worktree``/``notes`` only list."""
    flags = {"l", "--list", "-vv", "--verbose", "--contains", "--merged", "--no-merged", "--show-current", "v"}
    return flags | {"a", "r", "--all", "--remotes"} if sub == "branch" else flags


def _git(cmd: SimpleCommand, line: _Line) -> None:
    findings = line.findings
    sub, rest, settings = git_subcommand(cmd.argv)
    if any(_GIT_PROGRAM_SETTINGS.match(s.split("=", 1)[0]) and not (
            s.lower().startswith("alias.") and not s.split("=", 1)[-1].startswith("!"))
            and not _harmless_pager(s) for s in settings):
        findings.add(DESTRUCTIVE, "sets a git option that runs a program (git -c)")
    flags = _flags(rest)
    if sub in ("status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "ls-tree", "describe", "shortlog",
               "grep", "reflog", "cat-file", "whatchanged", "name-rev", "help", "version", "", "check-ignore",
               "rev-list", "for-each-ref", "show-ref", "merge-base", "count-objects", "fsck", "verify-commit",
               "range-diff", "cherry", "show-branch", "ls-remote", "var", "check-attr", "bugreport"):
        if sub == "ls-remote":
            findings.add(MODERATE, "network access")
        return
    if sub == "push":
        operands = _operands(("push", *rest))
        forced = flags & {"f", "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "d",
                          "--prune"} or any(r.startswith(("+", ":")) for r in operands[1:])
        if forced:
            findings.add(DESTRUCTIVE, "force-pushes or deletes remote history")
        remote = operands[0] if operands else None
        if remote and (re.match(r"[a-z]+://|[\w.-]+@[\w.-]+:", remote) or _added_remote(line, remote)):
            findings.add(DESTRUCTIVE, f"pushes to a remote added or named on the spot ({remote})")
        findings.add(MODERATE, "publishes commits (network access)")
    elif sub == "clean" and flags & {"f", "--force"}:
        findings.add(DESTRUCTIVE, "deletes untracked files (git clean)" + (" including ignored ones" if "x" in flags
                                                                              or "X" in flags else ""))
    elif sub == "reset" and "--hard" in rest:
        findings.add(DESTRUCTIVE, "discards uncommitted changes (reset --hard)")
    elif sub in ("checkout", "restore", "switch") and (
            "." in rest or flags & {"f", "--force", "--discard-changes"} or "--" in rest and sub == "checkout"
            or sub == "checkout" and len(parse(cmd.argv).operands) > 1     # git checkout REV PATH...
            or sub == "restore" and ("--staged" not in rest and "S" not in flags or flags & {"W", "--worktree"})):
        findings.add(DESTRUCTIVE, "discards uncommitted changes")
    elif sub == "rm" and parse(cmd.argv).has("-f", "--force") and not parse(cmd.argv).has("--cached"):
        findings.add(DESTRUCTIVE, "discards uncommitted changes (git rm -f)")
    elif sub == "branch" and flags & {"D", "d", "--delete"}:
        findings.add(DESTRUCTIVE if "D" in flags or "--force" in flags else MODERATE, "deletes a branch")
    elif sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        findings.add(DESTRUCTIVE, "throws away stashed changes")
    elif sub == "stash" and rest[:1] in (["list"], ["show"]):
        return
    elif sub in ("filter-branch", "filter-repo") or sub == "rebase" and flags & {"i", "--interactive"}:
        findings.add(DESTRUCTIVE, "rewrites history")
    elif sub == "update-ref" and "-d" in rest or sub == "reflog" and rest[:1] in (["expire"], ["delete"]) or \
            sub == "gc" and any(w.startswith("--prune=now") for w in rest):
        findings.add(DESTRUCTIVE, "deletes history (refs or unreachable commits)")
    elif sub == "config":
        _git_config(rest, findings)
    elif sub == "submodule" and rest[:1] in (["status"], ["summary"], []):
        return
    elif sub in ("fetch", "pull", "clone", "submodule"):
        findings.add(MODERATE, "network access")
        if sub == "pull":
            findings.add(MODERATE, "changes the working tree")
    elif sub in ("branch", "tag", "remote", "worktree", "notes") and (
            not rest or flags & _listing_flags(sub) or rest[:1] in (["list"], ["show"], ["get-url"])):
        return
    elif sub == "worktree" and rest[:1] == ["add"]:
        words = [w for i, w in enumerate(rest[1:], 1) if not w.startswith("-") and rest[i - 1] not in ("-b", "-B",
                                                                                                     "--reason")]
        for target in words[:1]:
            use = PathUse(target, resolve_path(target, line.cwd), "write", recursive=True)
            judge_write(Place(use, line.workspace),
                         findings, "creates")
        findings.add(MODERATE, "adds a worktree")
    elif sub == "apply" and flags & {"--stat", "--check", "--numstat", "--summary"} and "--apply" not in flags:
        return

    else:
        findings.add(MODERATE, f"changes the repository (git {sub})")


def _git_config(rest: list[str], findings: Findings) -> None:
    read = {"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--name-only", "get", "list"}
    if any(w in read for w in rest) or len([w for w in rest if not w.startswith("-")]) <= 1 \
            and not any(w in ("--unset", "--unset-all", "--remove-section") for w in rest):
        return
    keys = [w for w in rest if not w.startswith("-")]
    at = 1 if keys and keys[0] in ("set", "unset") else 0
    key = keys[at] if len(keys) > at else ""
    value = keys[at + 1] if len(keys) > at + 1 else ""
    runs_git_only = key.lower().startswith("alias.") and not value.lstrip().startswith("!")
    if _GIT_PROGRAM_SETTINGS.match(key) and not runs_git_only:
        findings.add(DESTRUCTIVE, f"sets a git option that runs a program ({key}): persistence")
    elif "--global" in rest or "--system" in rest:
        findings.add(DESTRUCTIVE, "changes git settings for every repository (outside the working directory)")
    else:
        findings.add(MODERATE, "changes the repository's git settings")


def _added_remote(line: _Line, remote: str) -> bool:
    for other in line.programs:
        if other.name == "git":
            sub, rest, _ = git_subcommand(other.argv)
            if sub == "remote" and rest[:2] == ["add", remote] or sub == "remote" and rest[:1] == ["add"] \
                    and remote in rest:
                return True
    return False


def _chmod(cmd: SimpleCommand, line: _Line) -> None:
    flags = _flags(cmd.argv[1:])
    operands = _operands(cmd.argv)
    mode = operands[0] if operands else ""
    targets = [Place(u, line.workspace) for u in command_paths(cmd, line.cwd) if u.via == cmd.name]
    recursive = bool(flags & {"R", "--recursive"})
    wide = bool(re.fullmatch(r"0?[0-7]?7[0-7]7", mode) or re.search(r"(a|o)\+[rwx]*w|^\+?[rwx]*w", mode)
                and ("o" in mode or "a" in mode))
    if wide:
        line.findings.add(DESTRUCTIVE if recursive or any(not p.inside or p.system for p in targets) else MODERATE,
                          "makes files writable by everyone")
    if recursive and any(p.is_root_or_home or p.system for p in targets):
        line.findings.add(DESTRUCTIVE, f"changes ownership or permissions of system or home files ({cmd.name} -R)")
    elif re.search(r"[ugoa]*\+[rwx]*s|^[0-7]?[4-7][0-7]{3}$", mode) and cmd.name == "chmod":
        line.findings.add(DESTRUCTIVE, "sets a setuid/setgid bit")
    line.findings.add(MODERATE, "changes file permissions" if cmd.name == "chmod" else "changes file ownership")


def _no_op(cmd: SimpleCommand, line: _Line) -> None:
    """Programs whose whole effect is the paths they touch (judged already)."""


def _disk(cmd: SimpleCommand, line: _Line) -> None:
    line.findings.add(DESTRUCTIVE, "formats or repartitions a disk")


def _power(cmd: SimpleCommand, line: _Line) -> None:
    line.findings.add(DESTRUCTIVE, "shuts down or reboots the machine")


def _kill(cmd: SimpleCommand, line: _Line) -> None:
    operands = _operands(cmd.argv)
    if cmd.name == "kill" and any(o in ("1", "-1") for o in operands) or "-1" in cmd.argv[1:]:
        line.findings.add(DESTRUCTIVE, "kills every process (or init)")
    line.findings.add(MODERATE, "stops processes")


def _copy_move(cmd: SimpleCommand, line: _Line) -> None:
    operands = _operands(cmd.argv)
    if cmd.name == "mv" and operands[-1:] == ["/dev/null"]:
        line.findings.add(DESTRUCTIVE, "moves files into /dev/null (deletes them)")
    if cmd.name == "mv" and any(Place(u, line.workspace).is_root_or_home for u in command_paths(cmd, line.cwd)):
        line.findings.add(DESTRUCTIVE, "moves system or home directories")
    line.findings.add(MODERATE, "moves files" if cmd.name == "mv" else "copies files")


def _truncate(cmd: SimpleCommand, line: _Line) -> None:
    sizes = [cmd.argv[i + 1] for i, w in enumerate(cmd.argv[:-1]) if w in ("-s", "--size")]
    sizes += [w.split("=", 1)[1] for w in cmd.argv if w.startswith("--size=")]
    if any(re.fullmatch(r"[<%/]?0+[KMGTPkmgtp]?B?", size) or size.startswith("-") for size in sizes):
        line.findings.add(DESTRUCTIVE, "empties files (truncate: the content is lost)")
    else:
        line.findings.add(MODERATE, "resizes files (truncate)")


def _writers(cmd: SimpleCommand, line: _Line) -> None:
    if cmd.name == "mkdir":
        line.findings.add(MODERATE, "creates directories")


def _sed(cmd: SimpleCommand, line: _Line) -> None:
    if any(w.startswith(("-i", "--in-place")) for w in cmd.argv[1:]):
        line.findings.add(MODERATE, "edits files in place")
    elif re.search(r"(^|;|\s)[0-9,$]*\s*(w|e)\s|\be\b", " ".join(cmd.argv[1:2])):
        line.findings.add(MODERATE, "sed program writes files or runs commands")


def _crontab(cmd: SimpleCommand, line: _Line) -> None:
    if "-r" in cmd.argv:
        line.findings.add(DESTRUCTIVE, "deletes every scheduled job (crontab -r)")
    elif "-l" not in cmd.argv:
        line.findings.add(DESTRUCTIVE, "installs scheduled jobs (persistence)")


def _systemctl(cmd: SimpleCommand, line: _Line) -> None:
    verbs = [w for w in cmd.argv[1:] if not w.startswith("-")]
    verb = verbs[0] if verbs else ""
    if verb in ("status", "list-units", "list-unit-files", "show", "cat", "is-active", "is-enabled", "list-timers",
                "is-failed", "list-sockets", "list-dependencies", ""):
        return
    if verb in ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate"):
        line.findings.add(DESTRUCTIVE, "shuts down or reboots the machine")
    elif verb in ("enable", "link", "edit", "set-property", "preset", "add-wants", "add-requires"):
        line.findings.add(DESTRUCTIVE, "installs or changes services that start by themselves (persistence)")
    elif verb in ("mask", "disable", "stop", "kill"):
        line.findings.add(DESTRUCTIVE if "--user" not in cmd.argv else MODERATE, "stops or disables services")
    else:
        line.findings.add(MODERATE, "changes services")


def _docker(cmd: SimpleCommand, line: _Line) -> None:
    words = [w for w in cmd.argv[1:] if not w.startswith("-")]
    sub = " ".join(words[:2])
    if words[:1] in (["rm"], ["rmi"]) or sub in ("system prune", "volume rm", "volume prune", "image prune",
                                                   "container prune", "network rm", "image rm",
                                                   "container rm", "builder prune"):
        line.findings.add(DESTRUCTIVE, "deletes containers, images or volumes")
    elif sub == "compose down":
        if {"-v", "--volumes", "--rmi"} & set(cmd.argv):
            line.findings.add(DESTRUCTIVE, "deletes the stack's volumes (their data) or images")
        else:
            line.findings.add(MODERATE, "stops and removes containers (volumes kept)")
    elif words[:1] in (["ps"], ["images"], ["logs"], ["inspect"], ["version"], ["info"]) or sub in (
            "image ls", "container ls", "volume ls", "network ls", "compose ps", "compose logs"):
        return
    elif "--privileged" in cmd.argv or any("/:/" in w or w.startswith("/:") or "docker.sock" in w for w in cmd.argv):
        line.findings.add(DESTRUCTIVE, "runs a privileged container or mounts the host root")
    else:
        line.findings.add(MODERATE, f"runs {cmd.name} {words[0] if words else ''}".strip())


def sql_findings(statements: Iterable[str], findings: Findings) -> bool:
    """Judge SQL text; returns whether there was any."""
    any_sql = False
    for text in statements:
        any_sql = True
        if _SQL_DESTRUCTIVE.search(text):
            findings.add(DESTRUCTIVE, "drops, empties or rewrites whole database tables")
        if _SQL_SECRET_COLUMNS.search(text):
            findings.add(DESTRUCTIVE, "reads secret-looking columns (passwords, tokens, keys) into the agent's context")
        elif _SQL_CHANGE.search(text):
            findings.add(MODERATE, "changes the database")
    return any_sql


def _sql(cmd: SimpleCommand, line: _Line) -> None:
    statements = [cmd.argv[i + 1] for i, w in enumerate(cmd.argv[:-1]) if w in ("-c", "--command", "-e", "--execute")]
    statements += [w.split("=", 1)[1] for w in cmd.argv[1:] if w.startswith(("--command=", "--execute="))]
    if cmd.name in ("sqlite3", "duckdb"):
        statements += _operands(cmd.argv)[1:]
    if not sql_findings(statements, line.findings) or cmd.piped_from or cmd.name not in ("sqlite3", "duckdb"):
        line.findings.add(MODERATE, f"runs {cmd.name} (database access)")


def _reverse_shell(cmd: SimpleCommand, line: _Line) -> None:
    argv = cmd.argv
    if cmd.name in ("nc", "ncat", "netcat") and any(w in ("-e", "-c", "--exec", "--sh-exec", "--lua-exec")
                                                    for w in argv[1:]):
        line.findings.add(DESTRUCTIVE, "connects a shell to the network (nc -e): a reverse shell")
    elif cmd.name == "socat" and any(re.match(r"(exec|system):", w, re.I) for w in argv[1:]):
        line.findings.add(DESTRUCTIVE, "connects a program to the network (socat exec): a reverse shell")
    _network_findings(cmd, line)


def _interpreter_findings(cmd: SimpleCommand, line: _Line) -> None:
    findings = line.findings
    options = INTERPRETERS[interpreter_of(cmd.name) or "python"]
    code = next((cmd.argv[i + 1] for i, w in enumerate(cmd.argv[:-1]) if w in options), None)
    if code is None:
        code = next((w.split("=", 1)[1] for w in cmd.argv[1:] if w.startswith("--eval=")), None)
    if code is None and _operands(cmd.argv)[:1] in ([], ["-"]):
        # python3 - <<'EOF' ... EOF: the here-document is the program, written out in the call
        code = next((r.body if r.body is not None else r.target for r in cmd.redirects
                     if r.op.lstrip("0123456789") in ("<<", "<<-", "<<<")), None)
    if code is None:
        modules = [cmd.argv[i + 1] for i, w in enumerate(cmd.argv[:-1]) if w == "-m"]
        if modules and modules[0] in ("http.server", "SimpleHTTPServer"):
            findings.add(MODERATE, "serves files over the network")
        elif modules and modules[0] in ("pip",):
            findings.add(MODERATE, "installs packages")
        elif modules and modules[0] in ("pytest", "unittest", "mypy", "ruff", "black", "flake8", "pylint", "json.tool",
                                        "venv", "compileall", "build", "isort", "coverage", "tox", "nox"):
            findings.add(MODERATE, "runs project code or tools")
        elif any(w in ("--version", "-V", "--help", "-h") for w in cmd.argv[1:]):
            return
        elif _script_feed(cmd):
            feeders = [c for c in line.programs if c.pipeline == cmd.pipeline and c.pipes_to] + [
                c for c in line.programs if c.construct == "<(" and c.parent == cmd.argv[0]]
            if any(c.name in FETCHERS for c in feeders):
                findings.add(DESTRUCTIVE, f"pipes a download into {cmd.name}")
            else:
                findings.add(DESTRUCTIVE, f"runs {cmd.name} code it reads from a pipe (unseen)")
        else:
            findings.add(MODERATE, f"runs a {cmd.name} program")
        return
    inline_code_findings(code, cmd.name, line.cwd, line.workspace, findings)


def inline_code_findings(code: str, language: str, cwd: str | None, workspace: str | None,
                         findings: Findings) -> None:
    """Code given in the call (``python -c``, a REPL or code-execution tool, browser ``evaluate``):
    what it deletes, starts, sends, decodes, writes or reads, as far as the text shows."""
    for kind in hidden_in(code):
        if kind != "zero_width":
            findings.add(DESTRUCTIVE, HIDDEN_REASONS[kind])
    if re.search(r"(\$\(|`)\s*(curl|wget|fetch|http|xh)\b", code):
        findings.add(DESTRUCTIVE, "runs a downloaded script (the code comes from curl or wget)")
    if _INLINE_DELETE.search(code):
        findings.add(DESTRUCTIVE, "deletes files from inline code")
    if _INLINE_SHELL.search(code):
        findings.add(DESTRUCTIVE, "inline code starts other programs (not shown as commands)")
    if _INLINE_SEND.search(code):
        findings.add(DESTRUCTIVE, "inline code sends data over the network")
    elif _INLINE_NETWORK.search(code):
        findings.add(MODERATE, "inline code reads from the network")
    if _INLINE_DECODE.search(code):
        findings.add(DESTRUCTIVE, "inline code runs code it builds or decodes at run time")
    if _INLINE_WRITE.search(code):
        findings.add(MODERATE, "inline code writes files")
    for path in re.findall(r"['\"]((?:~|/|\$HOME)[^'\"]*)['\"]", code):
        judge_read(Place(PathUse(path, resolve_path(path, cwd), "read"), workspace), findings)
    findings.add(MODERATE, f"runs inline {language} code")


def _package_findings(cmd: SimpleCommand, findings: Findings) -> bool:
    words = [w for w in cmd.argv[1:] if not w.startswith("--")]
    verbs = PACKAGE_MANAGERS[cmd.name]
    if "*" in verbs or (words and words[0] in verbs):
        verb = words[0] if words else ""
        if verb in ("uninstall", "remove", "purge", "-R", "-Rns"):
            findings.add(MODERATE, "removes packages")
        else:
            findings.add(MODERATE, "installs packages (runs their install scripts)")
        findings.add(MODERATE, "network access")
        if cmd.name in ("apt", "apt-get", "dnf", "yum", "pacman", "snap", "brew"):
            findings.add(DESTRUCTIVE, "changes system packages")
        elif cmd.name in ("pip", "pip3") and "--user" in cmd.argv or "--break-system-packages" in cmd.argv:
            findings.add(DESTRUCTIVE, "installs packages outside a project environment")
        elif cmd.name in ("npm", "pnpm", "yarn") and ({"-g", "--global"} & set(cmd.argv) or "global" in words):
            findings.add(DESTRUCTIVE, "installs packages for the whole machine (-g)")
        elif cmd.name in ("cargo", "go", "pipx", "gem") and verb in ("install",) and not (
                cmd.name == "gem" and any(w.startswith(("--install-dir", "-i")) for w in cmd.argv)) or \
                cmd.name == "uv" and words[:2] == ["tool", "install"]:
            findings.add(DESTRUCTIVE, "installs programs for the user, outside the project")
        return True
    return False


def _network_findings(cmd: SimpleCommand, line: _Line) -> None:
    findings = line.findings
    argv = cmd.argv
    findings.add(MODERATE, "network access")
    sends = {"-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form", "-T", "--upload-file",
             "--json", "--post-data", "--post-file"}
    if any(w.split("=", 1)[0] in sends for w in argv[1:]) or re.search(r"-X\s*(POST|PUT|PATCH|DELETE)", " ".join(argv)):
        findings.add(MODERATE, "sends data over the network")
        if any(WEBHOOK.search(w) for w in argv[1:]):
            findings.add(DESTRUCTIVE, "posts to a webhook (a message to people, or a trigger elsewhere)")
    if re.search(r"(-X|--request|--method)[\s=]*['\"]?DELETE\b", " ".join(argv), re.I):
        findings.add(DESTRUCTIVE, "deletes a remote resource (HTTP DELETE)")
    for text in argv[1:]:
        for secret in secrets_in(text):
            findings.add(DESTRUCTIVE, f"sends {secret} off the machine")
        for variable in re.findall(r"\$\{?([A-Za-z_]\w*)", text):
            if secret_variable(variable):
                findings.add(DESTRUCTIVE, f"sends a secret from the environment off the machine (${variable})")
        if METADATA.search(text):
            findings.add(DESTRUCTIVE, "reads the cloud instance's credentials (metadata endpoint)")
    remote = [o for o in _operands(argv)[1:] if re.match(r"([\w.-]+@)?[\w.-]+:", o) and not o.startswith("/")]
    if cmd.name in ("scp", "rsync", "sftp", "rclone", "gsutil", "s3cmd") and _operands(argv) and \
            _operands(argv)[-1] in remote:
        findings.add(DESTRUCTIVE, "copies files to another machine")
    if cmd.name in ("ssh", "mosh"):
        _remote_command(cmd, line)
    for use in command_paths(cmd, line.cwd):
        if use.via.endswith("upload") and Place(use, line.workspace).secret:
            findings.add(DESTRUCTIVE, "uploads a secrets file")
    if cmd.name == "rsync" and "--delete" in argv and ":" in (_operands(argv) or [""])[-1]:
        findings.add(DESTRUCTIVE, "deletes files at the destination (rsync --delete)")
    if cmd.name in ("scp", "rsync", "sftp", "rclone", "gsutil", "s3cmd"):
        for operand in _operands(argv)[:-1]:
            place = Place(PathUse(operand, resolve_path(operand, line.cwd), "read"), line.workspace)
            if ":" not in operand and place.secret:
                findings.add(DESTRUCTIVE, "copies a secrets file off the machine")
    if cmd.name in ("kubectl", "helm", "terraform", "aws", "gcloud", "az", "gsutil", "s3cmd", "rclone"):
        joined = " ".join(argv[1:])
        if re.search(r"\b(delete|destroy|rm|rb|uninstall|terminate|purge|apply|deploy|scale|drain|cordon)\b", joined):
            findings.add(DESTRUCTIVE, "changes or deletes cloud or cluster resources")
    if cmd.name == "gh":
        words = _subcommand(argv)
        if words[:1] in (["api"],) and re.search(r"-X\s*(DELETE|PUT|PATCH|POST)|--method", " ".join(argv)):
            findings.add(DESTRUCTIVE, "changes GitHub resources through the API")



def _remote_command(cmd: SimpleCommand, line: _Line) -> None:
    """``ssh host CMD``: CMD runs elsewhere; anything beyond reading there changes another machine."""
    words: list[str] = []
    argv = list(cmd.argv[1:])
    value_options = set("BbcDEeFIiJLlmOoPpQRSWw")
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i][-1] in value_options and len(argv[i]) == 2 else 1
    words = argv[i + 1:]
    if not words:
        return
    inner = Findings()
    command_findings(read_command(" ".join(words), line.run.key), None, "/nonexistent-remote", inner, line.depth + 1)
    if inner.level != SAFE:
        line.findings.add(DESTRUCTIVE, "changes another machine (ssh runs: " + (inner.reasons()[0]) + ")")
    else:
        line.findings.add(MODERATE, "runs a command on another machine")


_RECURSIVE_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep"})


def _searches_home(cmd: SimpleCommand, line: _Line) -> bool:
    """``grep -r password ~`` or ``rg token /``: every file's content under the home or root."""
    flags = _flags(cmd.argv[1:])
    recursive = cmd.name in ("rg", "ag", "ack") or bool(flags & {"r", "R", "--recursive", "--dereference-recursive"})
    listing = bool(flags & {"l", "L", "c", "--files-with-matches", "--files-without-match", "--count", "--files"})
    if not recursive or listing:
        return False
    targets = _operands(cmd.argv)[1:]
    return any(Place(PathUse(t, resolve_path(t, line.cwd), "read"), line.workspace).is_root_or_home for t in targets)


def _read_only_findings(cmd: SimpleCommand, line: _Line) -> None:
    findings = line.findings
    if cmd.name in ("env", "printenv", "export", "declare", "set", "typeset") and (
            cmd.name in ("env", "printenv") and not [w for w in cmd.argv[1:] if not w.startswith("-")]
            or cmd.argv[1:] in (("-p",), ("-x",), ("-px",)) or cmd.name == "set" and len(cmd.argv) == 1):
        if not _filtered_harmlessly(cmd, line):
            findings.add(DESTRUCTIVE, "prints the whole environment (tokens and keys) into the agent's context")
        return
    if cmd.name in ("env", "printenv"):
        if any(secret_variable(n) for n in _operands(cmd.argv)):
            findings.add(DESTRUCTIVE, "prints a secret from the environment into the agent's context")
        return
    if cmd.name in ("echo", "printf") and any(secret_variable(name) for w in cmd.argv[1:]
                                              for name in re.findall(r"\$\{?([A-Za-z_]\w*)", w)):
        findings.add(DESTRUCTIVE, "prints a secret from the environment into the agent's context")
        return
    if cmd.name in ("source", "."):
        findings.add(MODERATE, "runs a script in the current shell")
        return
    if cmd.name in _RECURSIVE_SEARCHERS and _searches_home(cmd, line):
        findings.add(DESTRUCTIVE, "searches the contents of the whole home or root (secrets included)")
    if cmd.name == "awk" and re.search(r"system\s*\(|print[^;]*>|\|\s*\"|getline", " ".join(cmd.argv[1:])):
        findings.add(MODERATE, "awk program runs commands or writes files")
    if cmd.name in ("base64", "xxd") and ("-d" in cmd.argv or "--decode" in cmd.argv or "-r" in cmd.argv) \
            and cmd.pipes_to:
        findings.add(MODERATE, "decodes text for the next command")


_HANDLERS: dict[str, Callable[[SimpleCommand, _Line], None]] = {
    "rm": _rm, "rmdir": _no_op, "shred": _rm, "unlink": _no_op, "srm": _rm, "trash": _no_op, "trash-put": _no_op,
    "find": _find, "git": _git, "chmod": _chmod, "chown": _chmod, "chgrp": _chmod, "dd": _no_op,
    "mkfs": _disk, "fdisk": _disk, "sfdisk": _disk, "parted": _disk, "wipefs": _disk, "mkswap": _disk,
    "gdisk": _disk, "sgdisk": _disk, "cryptsetup": _disk, "shutdown": _power, "reboot": _power, "halt": _power,
    "poweroff": _power, "init": _power, "kill": _kill, "pkill": _kill, "killall": _kill, "cp": _copy_move,
    "mv": _copy_move, "truncate": _truncate, "tee": _no_op, "touch": _no_op, "mkdir": _writers,
    "ln": _no_op, "install": _no_op, "sed": _sed, "crontab": _crontab, "systemctl": _systemctl,
    "docker": _docker, "podman": _docker, "psql": _sql, "mysql": _sql, "sqlite3": _sql, "mariadb": _sql,
    "duckdb": _sql, "nc": _reverse_shell, "ncat": _reverse_shell, "netcat": _reverse_shell, "socat": _reverse_shell,
    "launchctl": lambda cmd, line: line.findings.add(
        DESTRUCTIVE if any(w in ("load", "bootstrap", "enable", "submit") for w in cmd.argv) else MODERATE,
        "changes launch agents (persistence)"),
    "at": lambda cmd, line: line.findings.add(DESTRUCTIVE, "schedules a job (persistence)"),
    "ansible-playbook": lambda cmd, line: line.findings.add(DESTRUCTIVE, "changes other machines (ansible)"),
    "ansible": lambda cmd, line: line.findings.add(
        DESTRUCTIVE if {"-b", "--become", "-m", "--module-name"} & set(cmd.argv) else MODERATE,
        "runs commands on other machines (ansible)"),
    "security": lambda cmd, line: line.findings.add(
        DESTRUCTIVE if "-w" in cmd.argv or "-g" in cmd.argv or "dump-keychain" in cmd.argv else MODERATE,
        "reads the keychain"),
    "gpg": lambda cmd, line: line.findings.add(
        DESTRUCTIVE if any(w.startswith(("--export-secret", "--delete-secret", "--delete-key")) for w in cmd.argv)
        else MODERATE, "exports or deletes private keys" if any(w.startswith(("--export-secret", "--delete"))
                                                                 for w in cmd.argv) else "runs gpg"),
}
_HANDLERS.update({f"mkfs.{fs}": _disk for fs in ("ext2", "ext3", "ext4", "xfs", "btrfs", "vfat", "fat", "ntfs",
                                                 "exfat")})

