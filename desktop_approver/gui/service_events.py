"""The Qt-free service's listener lists as Qt signals: the one place the GUI subscribes to the core.

The core (:mod:`desktop_approver.core`) cannot emit Qt signals; it calls plain listeners. This
object is its only GUI listener and turns each call into a signal, so the app wires the core to
the tray, the dialog and the notifications with ``connect`` like everything else. Everything runs
on the one qasync thread, so each signal is delivered at once, in connection order, as the
listener calls were.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

from ..core.service import ApproverService


class ServiceEvents(QObject):
    mode_changed = Signal(str, object)      # (mode, reason or None)
    trouble = Signal(str, object)           # (what: "audit" | "policy", what is wrong or None when it works again)
    socket_health = Signal(object)          # what keeps agents from reaching the app's socket; None when fixed
    agent_notice = Signal(str, str, str)    # (agent label, kind, text): an agent waits for the person or finished
    show_requested = Signal(str)            # `desktop-approver show`: "request", "inbox" or "history"

    def __init__(self, service: ApproverService, parent: QObject | None = None) -> None:
        super().__init__(parent)
        service.mode.listeners.append(self._mode_changed)
        service.health_listeners.append(self._trouble)
        service.server.health_listeners.append(self._socket_health)
        service.broker.notice_listeners.append(self._agent_notice)
        service.broker.show_listeners.append(self.show_requested.emit)

    def _mode_changed(self, mode: str, reason: str | None) -> None:
        self.mode_changed.emit(mode, reason)

    def _trouble(self, what: str, problem: str | None) -> None:
        self.trouble.emit(what, problem)

    def _socket_health(self, problem: str | None) -> None:
        self.socket_health.emit(problem)

    def _agent_notice(self, identity: Any, kind: str, text: str) -> None:
        self.agent_notice.emit(identity.label, kind, text)
