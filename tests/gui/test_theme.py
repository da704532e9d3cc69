"""Dark and light: the panes, diff colours, Pygments style and badges follow the theme."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtGui import QGuiApplication, QPalette

from desktop_approver import Client, previews
from desktop_approver.gui import theme
from desktop_approver.gui.badges import DARK_RISK_COLOURS, RISK_STYLE, RiskBadge
from desktop_approver.render import highlight, text_html
from tests.gui.conftest import wait_for


@pytest.fixture(autouse=True)
def light_again(qapp: Any) -> Iterator[None]:
    yield
    theme.apply("light")


def contrast(foreground: str, background: str) -> float:
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_forced_dark_sets_a_dark_palette_dark_panes_and_a_dark_pygments_style(qapp: Any) -> None:
    assert theme.apply("dark") is True
    assert theme.is_dark() and theme.choice() == "dark"
    assert QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 80
    assert highlight.PAPER == "#0d1117" and highlight.STYLE.name == "github-dark"
    page = text_html.render_json_html({"a": 1})
    assert "#e6edf3" in page  # the dark theme's ink
    assert theme.apply("light") is False
    assert highlight.PAPER == "#ffffff" and highlight.STYLE.name == "default"
    assert QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() > 180


def test_badges_read_well_in_both_themes() -> None:
    for level, (_icon, _text, fg, bg) in RISK_STYLE.items():
        assert contrast(fg, bg) >= 4.5, level
        dark_fg, dark_bg = DARK_RISK_COLOURS[level]
        assert contrast(dark_fg, dark_bg) >= 4.5, level
    for name in ("ADD", "DEL"):
        assert contrast(highlight.DARK_PALETTE["INK"], highlight.DARK_PALETTE[f"{name}_BG"]) >= 7


def test_auto_follows_the_desktop_palette(qapp: Any) -> None:
    from PySide6.QtCore import Qt

    theme.apply("light")
    if QGuiApplication.styleHints().colorScheme() != Qt.ColorScheme.Unknown:
        pytest.skip("this platform reports a colour scheme; the palette fallback is not used")
    dark = QPalette()
    dark.setColor(QPalette.ColorRole.Window, "#202020")
    qapp.setPalette(dark)
    assert theme.apply("auto") is True
    light = QPalette()
    light.setColor(QPalette.ColorRole.Window, "#f0f0f0")
    qapp.setPalette(light)
    assert theme.apply("auto") is False


def test_switching_restyles_the_open_dialog_in_place(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent="t")
        answer = asyncio.get_running_loop().run_in_executor(None, lambda: client.request(
            "write_file", {"path": "a.py", "content": "x = 2\n"}, preview=previews.diff("a.py", "x = 1\n", "x = 2\n")))
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        preview = dialog.review.preview
        preview.set_mode("split")
        theme.apply("dark")
        await wait_for(lambda: not preview.is_rendering(), what="the re-render")
        assert "#0d1117" in preview.diff_browser.styleSheet()
        assert highlight.DARK_PALETTE["ADD_BG"] in preview.diff_browser.toHtml()
        assert preview.mode() == "split"  # the view's state survives the switch
        assert DARK_RISK_COLOURS[dialog.review.badge.level][1] in dialog.review.badge.styleSheet()
        theme.apply("light")
        assert "#ffffff" in preview.diff_browser.styleSheet()
        dialog.deny.click()
        await answer

    run(scenario())


def test_unknown_theme_is_refused() -> None:
    with pytest.raises(ValueError):
        theme.apply("purple")
    badge = RiskBadge()
    badge.set_risk("nonsense")
    assert badge.level == "moderate"


def test_hidden_previews_catch_up_only_when_shown(qapp: Any, qtbot: Any) -> None:
    from desktop_approver.gui.preview_view import PreviewView

    view = PreviewView()
    qtbot.addWidget(view)
    view.set_content("write_file", {"path": "a"}, previews.diff("a", "x\n", "y\n"))
    theme.apply("light")
    theme.apply("dark")
    assert "#ffffff" in view.diff_browser.styleSheet()  # hidden (a closed window): nothing done yet
    view.show()
    assert "#0d1117" in view.diff_browser.styleSheet()
