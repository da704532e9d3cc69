"""The person's settings, in ``$XDG_CONFIG_HOME/desktop-approver/settings.toml`` (Qt-free).

What the settings window changes and the app applies live: the default time a request waits,
whether notifications are shown, the theme, and quiet hours (do-not-disturb between two times of
day). Command-line options still win for the run they are given to. A missing file means the
defaults; a broken one is reported and the defaults are used, never a crash. Saving goes through
tomlkit, so comments the person wrote in the file stay.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from dataclasses import asdict, dataclass, fields
from datetime import time
from pathlib import Path

from . import paths

THEMES = ("auto", "light", "dark")
_HOURS = re.compile(r"^(\d{1,2}):(\d{2})-(\d{1,2}):(\d{2})$")


class SettingsError(ValueError):
    """A settings file or value that cannot be used; says which and why."""


@dataclass(frozen=True)
class Settings:
    timeout: float = 300.0            # seconds a request waits for a person, then it is denied
    notifications: bool = True
    theme: str = "auto"               # auto | light | dark
    quiet_hours: str = ""             # "22:00-07:30": do not disturb in that span, every day
    relay: str = ""                   # "nats://host:4222": also answer requests relayed over NATS (next start)
    relay_creds: str = ""             # the approver's NATS credentials: a .creds file or one line user:password

    def validated(self) -> Settings:
        if (not isinstance(self.timeout, (int, float)) or isinstance(self.timeout, bool)
                or not 1 <= self.timeout <= 86400):
            raise SettingsError(f"timeout must be between 1 and 86400 seconds, not {self.timeout!r}")
        if not isinstance(self.notifications, bool):
            raise SettingsError(f"notifications must be true or false, not {self.notifications!r}")
        if self.theme not in THEMES:
            raise SettingsError(f"theme must be one of {', '.join(THEMES)}, not {self.theme!r}")
        if self.quiet_hours:
            quiet_span(self.quiet_hours)
        if not isinstance(self.relay, str) or self.relay and not self.relay.startswith(("nats://", "tls://")):
            raise SettingsError(f"relay must be a nats:// or tls:// address (or empty), not {self.relay!r}")
        if not isinstance(self.relay_creds, str) or self.relay_creds and not self.relay:
            raise SettingsError("relay_creds goes with a relay address")
        return self

    def quiet_now(self, now: time) -> bool:
        """Whether ``now`` falls in the quiet hours (a span may run past midnight)."""
        if not self.quiet_hours:
            return False
        start, end = quiet_span(self.quiet_hours)
        return start <= now < end if start <= end else (now >= start or now < end)


def quiet_span(text: str) -> tuple[time, time]:
    match = _HOURS.match(text.strip())
    if not match:
        raise SettingsError(f"quiet hours are written like 22:00-07:30, not {text!r}")
    h1, m1, h2, m2 = (int(group) for group in match.groups())
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        raise SettingsError(f"quiet hours are written like 22:00-07:30, not {text!r}")
    return time(h1, m1), time(h2, m2)


def default_path() -> Path:
    return paths.config_dir() / "settings.toml"


def load(path: Path | None = None) -> Settings:
    """The settings in the file, or the defaults when there is none; SettingsError when it is broken."""
    path = path or default_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Settings()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from None
    known = {field.name for field in fields(Settings)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SettingsError(f"{path}: unknown setting {', '.join(unknown)}")
    try:
        return Settings(**data).validated()
    except SettingsError as exc:
        raise SettingsError(f"{path}: {exc}") from None


def save(settings: Settings, path: Path | None = None) -> None:
    """Write the settings, keeping the file's comments; atomically."""
    import tomlkit  # only the settings window writes: the idle app never loads it

    path = path or default_path()
    settings.validated()
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8"))
    except Exception:  # no file yet, or one that is not TOML: start a fresh one
        document = tomlkit.document()
        document.add(tomlkit.comment("desktop-approver settings (the settings window writes this file)"))
    for key, value in asdict(settings).items():
        document[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".settings-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(tomlkit.dumps(document))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
