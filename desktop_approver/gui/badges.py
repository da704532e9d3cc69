"""Risk badges: colour plus icon plus text, never colour alone."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from . import theme

RISK_STYLE = {
    "safe": ("✔", "Safe", "#1b7a2e", "#e3f4e6"),
    "moderate": ("▲", "Moderate", "#8a5a00", "#fff3d6"),
    "destructive": ("⚠", "Destructive", "#b3261e", "#fde7e5"),
    # a call the reader did not understand and does not know to be destructive: no guessed level (issue 30)
    "not understood": ("?", "Not understood", "#4a4a8a", "#e8e8f6"),
}
DARK_RISK_COLOURS = {  # light text on deep backgrounds, each at least 4.5:1
    "safe": ("#7ee29a", "#12331c"),
    "moderate": ("#f5c542", "#3a2c05"),
    "destructive": ("#ff8f85", "#4a1410"),
    "not understood": ("#b9b9ff", "#23234a"),
}


def risk_colours(level: str) -> tuple[str, str]:
    """(text, background) of a risk level's badge in the current theme."""
    level = level if level in RISK_STYLE else "moderate"
    if theme.is_dark():
        return DARK_RISK_COLOURS[level]
    return RISK_STYLE[level][2], RISK_STYLE[level][3]


def risk_text(level: str) -> str:
    icon, text, _fg, _bg = RISK_STYLE.get(level, RISK_STYLE["moderate"])
    return f"{icon} {text}"


class RiskBadge(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("riskBadge")
        self.level = "moderate"
        self.set_risk("moderate")
        theme.signals().changed.connect(self._restyle)

    def _restyle(self, _dark: bool) -> None:
        self.set_risk(self.level)

    def set_risk(self, level: str) -> None:
        self.level = level if level in RISK_STYLE else "moderate"
        fg, bg = risk_colours(self.level)
        self.setText(risk_text(self.level))
        self.setAccessibleName(f"risk: {self.level}")
        self.setStyleSheet(f"QLabel {{ color: {fg}; background: {bg}; border: 1px solid {fg};"
                           f" border-radius: 9px; padding: 3px 10px; font-weight: bold; }}")

