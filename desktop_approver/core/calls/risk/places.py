"""Where a path points (secret, startup file, system, temp, inside the working directory), and what
reading, writing or deleting it there is worth."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from ..catalog import catalog
from ..reading import PathUse
from .findings import DESTRUCTIVE, MODERATE, Findings

_SECRET_NAMES = re.compile(
    r"(^|/)(\.env(\.(?!example$|sample$|template$|dist$)[\w.-]+)?|id_(rsa|dsa|ecdsa|ed25519)(_sk)?"
    r"|[\w.-]*\.(pem|key|p12|pfx|kdbx|keystore|jks|ppk)|\.netrc|\.git-credentials|\.pypirc|\.npmrc|\.pgpass"
    r"|credentials(\.json)?|secrets?(\.(json|ya?ml|toml|txt|env))?|shadow|gshadow|master\.key|\.htpasswd"
    r"|token(s)?(\.json)?|\.vault-token|service[-_]account[\w.-]*\.json|hosts\.yml|config\.json)$", re.I)
_PROCESS_ENVIRONMENT = re.compile(r"^/proc/[^/]+/environ$")
# ~/.aws and ~/.config/gh hold configuration beside their credentials: the credential files are
# listed by name in the catalog (credentials.toml), so reading ~/.aws/config stays safe.
_SECRET_DIRS = ("/.ssh/", "/.gnupg/", "/.kube/", "/.docker/", "/.password-store/", "/.config/gcloud/", "/.azure/")
_NOT_SECRET = re.compile(r"\.pub$|/\.ssh/(known_hosts|config)$|(^|/)\.env\.(example|sample|template|dist)$", re.I)
_STARTUP_FILES = re.compile(
    r"(^|/)\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin|cshrc|tcshrc"
    r"|kshrc|inputrc|xinitrc|xprofile|xsession(rc)?|pam_environment|gitconfig|npmrc|pythonrc|vimrc)$"
    r"|/\.config/fish/|/\.config/autostart/|/\.config/git/config$|/\.ssh/(authorized_keys|config|rc)$"
    r"|/\.local/share/systemd/|/\.config/systemd/|/Library/LaunchAgents/|^/etc/(profile|bash|zsh|cron|systemd"
    r"|init\.d|rc\.local|sudoers|environment|ld\.so)|^/var/spool/cron")
# Files an agent or an editor reads to decide what runs without asking, or runs on opening a folder:
# an agent writing them approves its own future calls (issue 19). Matched case-insensitively, as a
# case-insensitive file system (macOS, Windows) opens `.Claude/settings.json` as the same file.
_SELF_APPROVING = re.compile(
    r"/\.claude/(settings(\.local)?\.json|hooks/)|/\.claude\.json$|/\.mcp\.json$|/\.codex/|/\.gemini/settings\.json$"
    r"|/\.cursor/|/\.vscode/(tasks|settings|launch)\.json$|/\.envrc$|/\.clinerules|/\.goose/|/\.openhands/"
    r"|/\.config/(goose|desktop-approver)/|/\.zed/(settings|tasks)\.json$|/\.roo/|/\.roomodes$|/opencode\.jsonc?$"
    r"|/\.opencode/|/\.aider\.conf\.ya?ml$|/\.continue/|/\.kiro/|/\.windsurf/|/\.amazonq/", re.I)
_SYSTEM_PREFIXES = ("/etc/", "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/boot/", "/opt/", "/var/", "/root/",
                    "/sys/", "/proc/", "/srv/", "/snap/", "/System/", "/Library/", "/Applications/")
_NEVER_PROJECTS = ("/etc/", "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/boot/", "/sys/", "/proc/", "/dev/",
                   "/System/", "/Library/")
_TEMP_PREFIXES = ("/tmp/", "/var/tmp/", "/dev/shm/")
_RAW_DEVICE = re.compile(r"^/dev/(sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d|md\d|dm-\d|mapper/|loop\d)")
_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/stdin",
                               "/dev/fd/1", "/dev/fd/2", "-", "/dev/random", "/dev/urandom"})
_SYSTEM_SECRETS = frozenset({"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/master.passwd"})
# Caches tools rebuild on their own: deleting one inside a project loses nothing.
_CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".tox",
                         ".nox", ".parcel-cache", ".eslintcache", ".turbo", ".next", ".nuxt", ".svelte-kit"})
_EXPANSION = re.compile(r"\$|`|\*|\?|\[")


@dataclass(frozen=True)
class Place:
    """Where a path points, judged against the agent's working directory (``workspace``)."""

    use: PathUse
    workspace: str | None

    @property
    def resolved(self) -> str:
        return self.use.resolved

    @property
    def raw(self) -> str:
        return self.use.path.strip()

    @property
    def home(self) -> str:
        return os.path.expanduser("~")

    @property
    def harmless(self) -> bool:
        return self.raw in _HARMLESS_DEVICES or self.resolved in _HARMLESS_DEVICES or self.raw.startswith(("<(", ">("))

    @property
    def known(self) -> bool:
        """Whether the path is absolute, or relative to a known working directory."""
        return os.path.isabs(self.resolved)

    @property
    def inside(self) -> bool:
        if self.workspace is None:
            return not self.known      # relative to an unknown directory: taken as the agent's own
        base = os.path.normpath(os.path.expanduser(self.workspace))
        return self.resolved == base or self.resolved.startswith(base.rstrip("/") + "/")

    @property
    def in_project(self) -> bool:
        """Inside a working directory that is a project of its own (``/var/www/shop``), not the
        root, the home or a top-level system folder that merely contains the path."""
        if self.workspace is None or not self.inside:
            return False
        base = os.path.normpath(os.path.expanduser(self.workspace))
        if any((base + "/").startswith(p) for p in _NEVER_PROJECTS):
            return False  # /etc/nginx is still /etc, whoever works there
        return len([p for p in base.split("/") if p]) >= 2 and base != self.home.rstrip("/")

    @property
    def is_workspace(self) -> bool:
        return self.workspace is not None and self.resolved == os.path.normpath(os.path.expanduser(self.workspace))

    @property
    def is_root_or_home(self) -> bool:
        top = self.resolved.rstrip("/") or "/"
        return top in ("/", self.home, os.path.dirname(self.home)) or self.raw in ("/", "~", "~/", "$HOME", "$HOME/",
                                                                                   "/*", "~/*", "$HOME/*")

    @property
    def secret(self) -> bool:
        if _NOT_SECRET.search(self.resolved):
            return False
        target = self.resolved + ("/" if not self.resolved.endswith("/") else "")
        return (bool(_SECRET_NAMES.search(self.resolved)) and not self.resolved.endswith("/config.json")
                or any(d in target for d in _SECRET_DIRS) or self.resolved in _SYSTEM_SECRETS
                or self.resolved.endswith("/.docker/config.json") or bool(_PROCESS_ENVIRONMENT.match(self.resolved))
                or _catalog_credential(self.resolved))

    @property
    def holds_credentials(self) -> bool:
        """The root, the home or a folder of it that holds credential files (``~/.config``,
        ``~/.aws``): a search, copy or archive of it reads them (issue 19, red team)."""
        top = self.resolved.rstrip("/")
        if not top:
            return True
        home = self.home.rstrip("/")
        if not (home + "/").startswith(top + "/") and not top.startswith(home + "/"):
            return False
        return any(path.startswith(top + "/") for path in _home_credentials(home, catalog().credential_names,
                                                                             catalog().credential_dirs))

    @property
    def startup(self) -> bool:
        return bool(_STARTUP_FILES.search(self.resolved))

    @property
    def approves(self) -> bool:
        """An agent's or editor's settings that run programs or approve calls by themselves."""
        return bool(_SELF_APPROVING.search(self.resolved))

    @property
    def system(self) -> bool:
        return any(self.resolved.startswith(p) or self.resolved == p.rstrip("/") for p in _SYSTEM_PREFIXES)

    @property
    def temp(self) -> bool:
        extra = os.environ.get("TMPDIR", "").rstrip("/")
        if (self.resolved + "/").startswith(self.home.rstrip("/") + "/"):
            return False  # a home directory that lives under /tmp (containers, tests) is still a home
        if self.workspace is not None and self.inside:
            return False  # a project checked out under /tmp is still the project: its files are not scratch
        return any(self.resolved.startswith(p) for p in _TEMP_PREFIXES) or bool(
            extra and extra not in ("", "/") and self.resolved.startswith(extra + "/"))

    @property
    def raw_device(self) -> bool:
        return bool(_RAW_DEVICE.match(self.resolved))

    @property
    def git_internals(self) -> bool:
        lowered = self.resolved.casefold()    # .GIT is .git where the file system ignores case
        return "/.git/" in lowered + "/" and not lowered.endswith("/.gitignore")

    @property
    def expands(self) -> bool:
        return bool(_EXPANSION.search(self.raw.replace("$HOME", "").replace("${HOME}", "")))


def _catalog_credential(resolved: str) -> bool:
    """A credential file the catalog lists (a CLI's token file, a registry login, an agent's own)."""
    known = catalog()
    target = resolved if resolved.endswith("/") else resolved + "/"
    return resolved.endswith(known.credential_names) or any(d in target for d in known.credential_dirs) \
        or target.endswith(_credential_folders(known.credential_names))


@lru_cache(maxsize=8)
def _home_credentials(home: str, names: tuple[str, ...], dirs: tuple[str, ...]) -> tuple[str, ...]:
    """Where the credential files and folders the catalog and this module list are in ``home``."""
    return tuple(home + (entry if entry.startswith("/") else "/" + entry) for entry in (*names, *dirs, *_SECRET_DIRS)
                 if entry.startswith("/."))


@lru_cache(maxsize=4)
def _credential_folders(names: tuple[str, ...]) -> tuple[str, ...]:
    """The folders that hold a listed credential file (``/.aws/``): searching one reads it."""
    return tuple({name.rsplit("/", 1)[0] + "/" for name in names if name.count("/") >= 2})


def judge_read(place: Place, findings: Findings) -> None:
    """Reading is safe anywhere, except a secret's content (it lands in the agent's context)."""
    if place.harmless:
        return
    if place.secret and not place.use.listing:
        findings.add(DESTRUCTIVE, "reads a secrets file (key, credentials or token) into the agent's context")
    elif not place.use.listing and place.holds_credentials:
        findings.add(DESTRUCTIVE, "reads a folder that holds credential files (the home, ~/.config, ~/.aws, ...)")


def judge_write(place: Place, findings: Findings, verb: str = "writes") -> None:
    if place.harmless:
        return
    if place.raw_device:
        findings.add(DESTRUCTIVE, "writes to a raw disk device")
    elif place.startup:
        findings.add(DESTRUCTIVE, "changes startup, login or scheduling files (persistence)")
    elif place.approves:
        findings.add(DESTRUCTIVE, "changes settings that run programs or approve calls by themselves (an agent's, an "
                                  "editor's, direnv's)")
    elif place.secret:
        findings.add(DESTRUCTIVE, f"{verb} a secrets or key file")
    elif place.git_internals:
        findings.add(DESTRUCTIVE, "writes inside .git (hooks, config, history)")
    elif place.temp:
        findings.add(MODERATE, "writes scratch files in the temp directory")
    elif place.system and not place.in_project:
        findings.add(DESTRUCTIVE, "writes to system files")
    elif not place.inside:
        findings.add(DESTRUCTIVE, "writes outside the working directory")
    else:
        findings.add(MODERATE, f"{verb} files in the working directory")


def judge_delete(place: Place, findings: Findings) -> None:
    recursive = place.use.recursive
    raw = place.raw.rstrip("/")
    whole = raw in ("", "*", ".", "..", "./*", ".*") or place.is_workspace
    if place.harmless:
        return
    if place.is_root_or_home or (recursive and whole) or (whole and raw in ("*", "./*")):
        findings.add(DESTRUCTIVE, "deletes the home, root or whole working directory")
    elif place.git_internals or raw.endswith(".git") or place.resolved.endswith("/.git"):
        findings.add(DESTRUCTIVE, "deletes inside .git (history)")
    elif place.secret or place.startup or place.approves:
        findings.add(DESTRUCTIVE, "deletes a key, secrets or startup file")
    elif _whole_temp(place):
        findings.add(DESTRUCTIVE, "deletes the whole temp directory (other programs' files and sockets)")
    elif place.temp:
        findings.add(MODERATE, "deletes scratch files in the temp directory")
    elif not place.inside or place.system and not place.in_project:
        findings.add(DESTRUCTIVE, "deletes outside the working directory")
    elif recursive and "$" in raw:
        findings.add(DESTRUCTIVE, "deletes recursively a path named by a variable")
    elif recursive and os.path.basename(place.resolved) in _CACHE_DIRS and place.in_project:
        findings.add(MODERATE, "deletes a cache directory in the working directory (regenerated)")
    elif recursive:
        # Even build output: what sits in a deleted tree is not known, and nothing brings it back.
        findings.add(DESTRUCTIVE, "deletes recursively")
    else:
        findings.add(MODERATE, "deletes files in the working directory")


def _whole_temp(place: Place) -> bool:
    """``rm -rf /tmp`` or ``/tmp/*``: every program's scratch files and sockets, not one's own."""
    target = place.resolved.rstrip("/")
    target = target[:-2] if target.endswith("/*") else target
    roots = {"/tmp", "/var/tmp", "/dev/shm", os.environ.get("TMPDIR", "/tmp").rstrip("/") or "/tmp"}
    return target in roots


def judge_use(use: PathUse, workspace: str | None, findings: Findings) -> None:
    place = Place(use, workspace)
    if use.operation == "read":
        judge_read(place, findings)
    elif use.operation == "write":
        judge_write(place, findings)
    else:
        judge_delete(place, findings)

