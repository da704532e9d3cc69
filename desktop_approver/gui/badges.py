"""Risk badges: colour plus icon plus text, never colour alone."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

RISK_STYLE = {
    "safe": ("✔", "Safe", "#1b7a2e", "#e3f4e6"),
    "moderate": ("▲", "Moderate", "#8a5a00", "#fff3d6"),
    "destructive": ("⚠", "Destructive", "#b3261e", "#fde7e5"),
}


def risk_text(level: str) -> str:
    icon, text, _fg, _bg = RISK_STYLE.get(level, RISK_STYLE["moderate"])
    return f"{icon} {text}"


class RiskBadge(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("riskBadge")
        self.level = "moderate"
        self.set_risk("moderate")

    def set_risk(self, level: str) -> None:
        self.level = level if level in RISK_STYLE else "moderate"
        _icon, _text, fg, bg = RISK_STYLE[self.level]
        self.setText(risk_text(self.level))
        self.setAccessibleName(f"risk: {self.level}")
        self.setStyleSheet(f"QLabel {{ color: {fg}; background: {bg}; border: 1px solid {fg};"
                           f" border-radius: 9px; padding: 3px 10px; font-weight: bold; }}")

