"""Where things live: the socket, the config, the data. Standard library only (the client uses it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

SOCKET_ENV = "DESKTOP_APPROVER_SOCKET"
SOCKET_NAME = "approver.sock"
APP_DIR_NAME = "desktop-approver"


def runtime_dir() -> Path:
    """The per-user private directory that holds the socket.

    ``$XDG_RUNTIME_DIR/desktop-approver`` where the session provides one (Linux desktops);
    otherwise a per-uid directory under the temp dir, which :func:`ensure_private_dir` checks
    is ours and 0700 before anything is put in it.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg) / APP_DIR_NAME
    import tempfile  # only here: the common path (a hook, once per tool call) never pays for it

    return Path(tempfile.gettempdir()) / f"{APP_DIR_NAME}-{os.getuid()}"


def default_socket_path() -> Path:
    return runtime_dir() / SOCKET_NAME


def resolve_socket_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--socket`` / ``socket_path=`` first, then ``$DESKTOP_APPROVER_SOCKET``, then the default."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(SOCKET_ENV)
    if env:
        return Path(env).expanduser()
    return default_socket_path()


def _base_dir(env_name: str, fallback: str) -> Path:
    value = os.environ.get(env_name)
    base = Path(value) if value else Path.home() / fallback
    return base / APP_DIR_NAME


def config_dir() -> Path:
    if sys.platform == "darwin" and not os.environ.get("XDG_CONFIG_HOME"):
        return Path.home() / "Library" / "Application Support" / APP_DIR_NAME
    return _base_dir("XDG_CONFIG_HOME", ".config")


def data_dir() -> Path:
    if sys.platform == "darwin" and not os.environ.get("XDG_DATA_HOME"):
        return Path.home() / "Library" / "Application Support" / APP_DIR_NAME
    return _base_dir("XDG_DATA_HOME", ".local/share")


def state_dir() -> Path:
    if sys.platform == "darwin" and not os.environ.get("XDG_STATE_HOME"):
        return Path.home() / "Library" / "Application Support" / APP_DIR_NAME
    return _base_dir("XDG_STATE_HOME", ".local/state")


def default_policy_path() -> Path:
    return config_dir() / "policy.toml"


def default_audit_path() -> Path:
    return data_dir() / "audit.sqlite3"


def default_settings_path() -> Path:
    return config_dir() / "settings.ini"


def default_state_path() -> Path:
    """Mode and other things that must survive a restart."""
    return state_dir() / "state.json"


class InsecureDirectory(RuntimeError):
    """The socket directory exists but is not ours or is readable by others."""


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` as 0700, or check an existing one is ours and not open to others.

    Refuses (:class:`InsecureDirectory`) a link or a directory another user made: in the shared
    temp directory, that user could otherwise listen on our socket's path and answer our clients.
    """
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if os.path.islink(path) or not os.path.isdir(path):
        raise InsecureDirectory(f"the socket directory {path} is not a directory of its own (a link or a file); "
                                "remove it or set XDG_RUNTIME_DIR")
    if info.st_uid != os.getuid():
        raise InsecureDirectory(f"the socket directory {path} belongs to uid {info.st_uid}, not to us ({os.getuid()}): "
                                "another user may be waiting to impersonate the app; remove it or set XDG_RUNTIME_DIR")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
