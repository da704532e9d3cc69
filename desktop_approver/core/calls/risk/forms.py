"""The form a program's command line takes, before any judging: which interpreter a program is,
and whether a line only simulates (``--dry-run``, ``rsync -n``, ``terraform plan``) or only reads
(help, version and listing forms of programs that otherwise change things).

Both readers of a shell line need these answers and must agree on them: :mod:`.programs` (the
findings) and :mod:`.understanding` (the catalog engine). They live here, below both, so that
neither reader imports the other for them.
"""

from __future__ import annotations

from ..grammar import interpreter_of, parse
from ..shellparse import SimpleCommand

__all__ = ["INTERPRETERS", "git_subcommand", "interpreter_of", "is_dry_run", "only_reads", "simulates"]

INTERPRETERS = {"python": ("-c",), "python2": ("-c",), "python3": ("-c",), "pypy": ("-c",), "pypy3": ("-c",),
                "python3.11": ("-c",), "python3.12": ("-c",), "python3.13": ("-c",),
                "node": ("-e", "--eval", "-p", "--print"), "deno": ("eval",), "bun": ("-e", "--eval"),
                "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",), "lua": ("-e",), "osascript": ("-e",),
                "Rscript": ("-e",), "julia": ("-e",), "pwsh": ("-c", "-Command"), "powershell": ("-c", "-Command")}


def is_dry_run(cmd: SimpleCommand) -> bool:
    """Whether the command only simulates or reads (``--dry-run``, ``rsync -n``, ``terraform plan``,
    ``ansible-playbook --syntax-check``, ``gofmt -l``): its catalog effect does not happen."""
    return simulates(cmd) or only_reads(cmd)


def simulates(cmd: SimpleCommand) -> bool:
    """Whether the command is a dry run as its grammar reads it (``--dry-run`` given as an option,
    not as another option's value; ``make -n``; ``terraform plan`` without a saved plan)."""
    return parse(cmd.argv).simulated


_READ_ONLY_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "npm": frozenset({"ls", "list", "view", "info", "outdated", "search", "help", "config get", "root", "prefix",
                      "explain", "why", "audit", "doctor", "version"}),
    "pip": frozenset({"list", "show", "freeze", "check", "help", "index", "config list", "debug"}),
    "go": frozenset({"env", "version", "list", "doc", "help", "vet"}),
    "cargo": frozenset({"tree", "metadata", "search", "help", "version", "--version", "check"}),
    "docker": frozenset({"ps", "images", "logs", "inspect", "version", "info", "image ls", "container ls",
                         "volume ls", "network ls", "compose ps", "compose logs", "compose config", "compose ls",
                         "compose images", "history", "stats", "top", "diff", "search", "system df"}),
    "helm": frozenset({"template", "lint", "show", "list", "ls", "status", "history", "get", "version", "search",
                       "env", "dependency list"}),
    "kubectl": frozenset({"get", "describe", "logs", "explain", "top", "version", "api-resources", "config view",
                          "config get-contexts", "auth can-i", "diff", "cluster-info", "kustomize"}),
    "openssl": frozenset({"x509", "verify", "version", "dgst", "asn1parse", "ciphers", "crl", "list"}),
    "gh": frozenset({"pr list", "pr view", "pr diff", "pr checks", "pr status", "issue list", "issue view",
                     "run list", "run view", "repo view", "release list", "release view", "auth status", "status",
                     "search", "browse", "workflow list", "workflow view", "api"}),
    "twine": frozenset({"check"}), "pulumi": frozenset({"preview", "stack ls", "whoami", "about"}),
    "tofu": frozenset({"plan", "validate", "show", "fmt -check", "version", "output"}),
    "terraform": frozenset({"plan", "validate", "show", "version", "output"}),
    "aws": frozenset({"sts get-caller-identity", "s3 ls", "configure list"}),
    "ssh-keygen": frozenset(), "unzip": frozenset(), "tar": frozenset(),
}
_ALWAYS_READ_ONLY = frozenset({"shellcheck", "ldd", "lddtree", "readelf", "objdump", "nm", "file", "tokei", "cloc",
                               "scc", "hadolint", "yamllint", "actionlint", "markdownlint", "codespell", "git-sizer",
                               "pydoc", "apropos", "info", "tldr", "lsb_release", "hostnamectl", "timedatectl",
                               "localectl", "whatis", "sw_vers", "system_profiler", "sysctl", "ulimit", "sestatus"})


def only_reads(cmd: SimpleCommand) -> bool:
    """Help, version and listing forms of programs that otherwise change things, as the grammar
    reads the command: a program the catalog does not know is never read as only reading."""
    name = cmd.name
    found = parse(cmd.argv)
    if not found.known or found.gaps:
        return False
    if found.helped and not cmd.piped_from:
        return True
    options = {use.option for use in found.options()}
    letters = {option[1:] for option in options if len(option) == 2 and option.startswith("-")}
    words = [*found.subcommand, *found.operands]
    if name in ("nvidia-smi", "rocm-smi"):
        return not any(use.role != "flag" or use.option.startswith(("--set", "--reset", "-r", "-e", "-c"))
                       for use in found.options())
    if name in _ALWAYS_READ_ONLY:
        return not (name == "sysctl" and (options & {"-w", "--write"} or any("=" in w for w in found.operands)))
    if name == "ssh-keygen":
        return bool(letters & {"l", "y", "F", "L"}) and not letters & {"R", "p", "c"}
    if name == "unzip":
        return bool(letters & {"l", "v", "t", "Z"}) and "d" not in letters
    if name == "tar":
        mode = "".join(letters) + (found.operands[0] if found.operands and not cmd.argv[1].startswith("-") else "")
        return "t" in mode and not {"x", "c", "r", "u"} & set(mode)
    if name == "ruff":
        return "--no-cache" in options and (words[:1] == ["check"] and "--fix" not in options
                                            or words[:1] == ["format"] and "--check" in options)
    if name == "gpg":
        return False
    if name in ("gofmt", "rustfmt", "black", "prettier", "isort", "clang-format", "shfmt"):
        return bool({"-l", "-d", "--check", "--diff", "--list-different", "--dry-run"} & options) and not {
            "-w", "--write", "-i"} & options
    if name in ("nc", "ncat", "netcat"):
        return cmd.argv[1:] == ("-h",)
    if name == "ansible-playbook":
        return bool({"--syntax-check", "--list-tasks", "--list-hosts", "--check", "-C"} & options)
    if name in ("pip", "pip3"):
        return bool(words) and words[0] in _READ_ONLY_SUBCOMMANDS["pip"]
    known = _READ_ONLY_SUBCOMMANDS.get(name)
    if not known or not words:
        return False
    two = " ".join(words[:2])
    if name == "gh" and words[0] == "api":
        return not options & {"-X", "--method", "-f", "-F", "--field", "--raw-field", "--input"}
    if name in ("terraform", "tofu") and words[0] == "plan" and found.by_role("write"):
        return False
    return words[0] in known or two in known


def git_subcommand(argv: tuple[str, ...]) -> tuple[str, list[str], list[str]]:
    """``(subcommand, its words, the -c settings)`` of a git command line."""
    words = list(argv[1:])
    settings: list[str] = []
    while words and words[0].startswith("-"):
        if words[0] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and len(words) > 1:
            if words[0] == "-c":
                settings.append(words[1])
            words = words[2:]
        else:
            if words[0].startswith("--config-env"):
                settings.append(words[0].split("=", 1)[-1])
            words = words[1:]
    return (words[0] if words else ""), words[1:], settings
