"""The statistics tab of the history window: calls per agent and per day, who decided, how fast.

The audit log has a row per call (a batch of three is three), so every count here is of calls.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QGridLayout, QLabel, QTreeWidget, QTreeWidgetItem, QWidget

from ..core.store.statistics import Statistics, compute
from .review_text import visible

BAR = 28  # characters of the longest bar


def bar(count: int, most: int) -> str:
    return "█" * max(1 if count else 0, round(BAR * count / most)) if most else ""


class StatisticsView(QWidget):
    def __init__(self, audit_path: Path | str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("statistics")
        self.audit_path = audit_path
        self.stats = Statistics()
        layout = QGridLayout(self)
        self.headline = QLabel()
        self.headline.setObjectName("statisticsHeadline")
        self.headline.setWordWrap(True)
        layout.addWidget(self.headline, 0, 0, 1, 2)
        self.agents = self._table("statisticsAgents", ("Agent", "Calls", ""))
        self.days = self._table("statisticsDays", ("Day", "Calls", ""))
        self.deciders = self._table("statisticsDeciders", ("Decided by", "Calls", ""))
        for column, (title, table) in enumerate((("Calls per agent", self.agents), ("Calls per day", self.days))):
            layout.addWidget(QLabel(f"<b>{title}</b>"), 1, column)
            layout.addWidget(table, 2, column)
        layout.addWidget(QLabel("<b>Who decided</b> (person, rule, session memory, mode, timeout)"), 3, 0, 1, 2)
        layout.addWidget(self.deciders, 4, 0, 1, 2)

    @staticmethod
    def _table(name: str, headers: tuple[str, ...]) -> QTreeWidget:
        table = QTreeWidget()
        table.setObjectName(name)
        table.setRootIsDecorated(False)
        table.setHeaderLabels(list(headers))
        table.setColumnWidth(0, 170)
        table.setColumnWidth(1, 80)
        return table

    def refresh(self) -> Statistics:
        self.stats = stats = compute(self.audit_path)
        median = stats.median_seconds_to_decide
        speed = (f"; you took {median:.1f} s to decide (median)" if median is not None
                 else "; you have not decided anything yet")
        self.headline.setText(f"{stats.requests:,} calls asked for in the audit log{speed}.")
        for table, rows in ((self.agents, stats.per_agent), (self.days, stats.per_day),
                            (self.deciders, stats.decided_by)):
            table.clear()
            most = max((count for _name, count in rows), default=0)
            for name, count in rows:
                table.addTopLevelItem(QTreeWidgetItem([visible(str(name)), str(count), bar(count, most)]))
        return stats
