"""Allow waits until a long diff is read to its end (issue 23): nobody approves what they could not see.

The dialog is armed at once here (no arming delay), so only the reading holds Allow back; the
diff cannot be known before the event loop turns (its rest is diffed in steps after the first
paint), which makes the locked state certain at the first look.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402

from desktop_approver.core.calls.risk import assess  # noqa: E402
from desktop_approver.core.decisions.tickets import CallInfo, Countdown, Identity, Ticket  # noqa: E402
from desktop_approver.gui.dialog import READING_REASON, ApprovalDialog  # noqa: E402

pytestmark = pytest.mark.gui

OLD = "".join(f"value_{n} = compute({n})\n" for n in range(6000))
NEW = "".join((f"value_{n} = calculate({n})\n" if n % 7 == 0 else f"value_{n} = compute({n})\n") for n in range(6000))
NEW = NEW.replace("value_5998 = compute(5998)", "value_5998 = compute(5998)  \u202e# )(lla_mr ;\u202c")
assert "\u202e" in NEW


@pytest.fixture()
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _ticket(loop: asyncio.AbstractEventLoop, preview: dict[str, Any]) -> Ticket:
    args = {"file_path": "big.py"}
    call = CallInfo(index=0, tool="Edit", args=args, preview=preview, risk=assess("Edit", args, cwd="/w"))
    return Ticket(request_id="r1", kind="request", calls=[call], session="s", identity=Identity(agent="agent"),
                  countdown=Countdown(300, loop=loop), batch_size=1)


def _reading_dialog(qtbot: Any, loop: asyncio.AbstractEventLoop) -> tuple[ApprovalDialog, list[Any]]:
    """A dialog loaded with the long diff, still reading it; the verdicts it answers land in the list."""
    dialog = ApprovalDialog(arming_delay_ms=0)
    qtbot.addWidget(dialog)
    answers: list[Any] = []
    dialog.decided.connect(lambda ticket, verdicts: answers.append(verdicts))
    dialog.load(_ticket(loop, {"kind": "diff", "path": "big.py", "old": OLD, "new": NEW}))
    return dialog, answers


def test_allow_waits_until_the_diff_is_read(qtbot: Any, loop: asyncio.AbstractEventLoop) -> None:
    dialog, answers = _reading_dialog(qtbot, loop)
    preview = dialog.review.preview
    assert dialog.armed and not preview.is_known() and dialog.reading()
    # Locked, and it says why, on the buttons and in the bar under the review.
    assert not dialog.allow_once.isEnabled() and not dialog.allow_session.isEnabled()
    assert not dialog.always_allow.isEnabled()
    assert READING_REASON in dialog.allow_once.toolTip()
    assert dialog.reading_note.isVisible() and dialog.reading_note.text() == READING_REASON
    assert dialog.deny.isEnabled()
    # Neither a shortcut nor a direct answer gets through.
    qtbot.keyClick(dialog, Qt.Key.Key_O, Qt.KeyboardModifier.AltModifier)
    dialog._answer("allow_once")
    dialog._answer("allow_session")
    assert answers == []
    qtbot.waitUntil(preview.is_known, timeout=60_000)
    assert any("U+202E" in warning for warning in preview.warnings())  # said before Allow unlocks
    assert dialog.allow_once.isEnabled() and not dialog.reading_note.isVisible()
    assert READING_REASON not in dialog.allow_once.toolTip()
    dialog.allow_once.click()
    assert len(answers) == 1 and answers[0][0].decision == "allow_once"


def test_the_verdict_says_fully_read_only_once_the_diff_is_read(qtbot: Any,
                                                                 loop: asyncio.AbstractEventLoop) -> None:
    """Issue 31: the risk panel said "fully read" while the diff was still being read."""
    dialog, _answers = _reading_dialog(qtbot, loop)
    reasons = dialog.review.reasons
    assert "the diff is still being read" in reasons.text()
    qtbot.waitUntil(dialog.review.preview.is_known, timeout=60_000)
    assert "still being read" not in reasons.text() and reasons.text().endswith("fully read")


def test_deny_works_while_the_diff_is_read(qtbot: Any, loop: asyncio.AbstractEventLoop) -> None:
    dialog, answers = _reading_dialog(qtbot, loop)
    assert dialog.reading()
    dialog.deny.click()
    assert len(answers) == 1 and answers[0][0].decision == "deny"


def test_a_short_diff_is_known_at_once(qtbot: Any, loop: asyncio.AbstractEventLoop) -> None:
    dialog = ApprovalDialog(arming_delay_ms=0)
    qtbot.addWidget(dialog)
    dialog.load(_ticket(loop, {"kind": "diff", "path": "small.py", "old": "a\n", "new": "b\n"}))
    assert not dialog.reading() and dialog.allow_once.isEnabled() and not dialog.reading_note.isVisible()


def test_closing_the_dialog_stops_drawing_its_diff(qtbot: Any, loop: asyncio.AbstractEventLoop) -> None:
    dialog = ApprovalDialog(arming_delay_ms=0)
    qtbot.addWidget(dialog)
    dialog.load(_ticket(loop, {"kind": "diff", "path": "big.py", "old": OLD, "new": NEW}))
    preview = dialog.review.preview
    assert preview.is_rendering()
    dialog.clear()
    assert not dialog.isVisible() and not preview.is_rendering()
    assert preview.rows_rendered == 0 and not dialog.reading()


def test_no_measuring_button_shows_on_the_dialog(qtbot: Any, loop: asyncio.AbstractEventLoop) -> None:
    """The buttons made to measure a label's width live until the loop deletes them: shown with the
    dialog they were a stray "…session (not the" button at its top left (seen under Xvfb)."""
    from PySide6.QtWidgets import QPushButton

    dialog = ApprovalDialog(arming_delay_ms=0)
    qtbot.addWidget(dialog)
    dialog.load(_ticket(loop, {"kind": "diff", "path": "small.py", "old": "a\n", "new": "b\n"}))
    dialog.show()
    shown = [button.text() for button in dialog.findChildren(QPushButton) if button.isVisible()]
    assert not any("unticked" in text for text in shown), shown
    assert sum("session" in text.replace("&", "") for text in shown) == 1, shown
