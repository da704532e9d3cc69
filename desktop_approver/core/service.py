"""The whole Qt-free app in one object: audit, memory, modes, policy, broker, server.

The GUI builds one :class:`ApproverService` with its own decider; tests and benchmarks build
one with a scripted decider. Nothing here knows about Qt.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import paths
from .audit import AuditLog
from .broker import DEFAULT_TIMEOUT, Broker
from .memory import SessionMemory
from .modes import ModeState
from .server import DEFAULT_MAX_PENDING_PER_CLIENT, ApproverServer, TokenCheck
from .tickets import Decider

log = logging.getLogger(__name__)


@dataclass
class ServiceOptions:
    socket_path: Path
    audit_path: Path | str
    policy_path: Path | None = None
    state_path: Path | None = None
    default_timeout: float = DEFAULT_TIMEOUT
    max_pending_per_client: int = DEFAULT_MAX_PENDING_PER_CLIENT
    session_idle_seconds: float = 8 * 3600.0
    token_check: TokenCheck | None = None

    @classmethod
    def from_args(cls, args: Any) -> "ServiceOptions":
        """From the CLI's ``--socket``, ``--policy``, ``--audit-db``, ``--timeout``."""
        return cls(socket_path=paths.resolve_socket_path(getattr(args, "socket", None)),
                   audit_path=Path(args.audit_db) if getattr(args, "audit_db", None) else paths.default_audit_path(),
                   policy_path=Path(args.policy) if getattr(args, "policy", None) else paths.default_policy_path(),
                   state_path=paths.default_state_path(),
                   default_timeout=getattr(args, "timeout", None) or DEFAULT_TIMEOUT)


class ApproverService:
    def __init__(self, options: ServiceOptions, decider: Decider) -> None:
        self.options = options
        self.audit = AuditLog(options.audit_path)
        self.memory = SessionMemory(idle_seconds=options.session_idle_seconds)
        self.mode = ModeState(options.state_path)
        self.mode.listeners.append(self._audit_mode)
        self.policy_watcher = self._make_policy_watcher(options.policy_path)
        self.broker = Broker(decider, audit=self.audit, memory=self.memory, policy=self.policy_watcher,
                             mode=self.mode, default_timeout=options.default_timeout)
        self.server = ApproverServer(self.broker, options.socket_path,
                                     max_pending_per_client=options.max_pending_per_client,
                                     token_check=options.token_check)

    async def start(self) -> None:
        await self.server.start()
        if self.policy_watcher is not None and hasattr(self.policy_watcher, "start"):
            self.policy_watcher.start()

    async def close(self) -> None:
        if self.policy_watcher is not None and hasattr(self.policy_watcher, "stop"):
            self.policy_watcher.stop()
        await self.server.close()
        await asyncio.sleep(0)
        self.audit.close()

    def _make_policy_watcher(self, path: Path | None) -> Any:
        if path is None:
            return None
        from .policy import PolicyWatcher

        return PolicyWatcher(path)

    def _audit_mode(self, mode: str, reason: str | None) -> None:
        self.audit.record_event("mode", mode, reason)
