"""The app's icons, loaded from the installed package (``desktop_approver.resources``), never
from a source tree: a wheel, a PyInstaller bundle and an editable checkout all answer the same.

Tray icons are SVGs rendered at each pixel size a panel may ask for (HiDPI scale 2 included),
so they stay crisp; the waiting count is painted onto the rendered pixels, not scaled with them.
Two looks: ``color`` (a filled shield with a white glyph, readable on light and dark panels)
and ``symbolic`` (one colour, dark on light panels and light on dark ones, like the panel's own
icons).
"""

from __future__ import annotations

import functools
from enum import StrEnum
from importlib import resources
from pathlib import Path

from PySide6.QtCore import QByteArray, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QGuiApplication, QIcon, QImage, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

from ..core.decisions import modes

RESOURCES = "desktop_approver.resources"
APP_ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)
TRAY_PIXEL_SIZES = (16, 22, 24, 32, 44, 48, 64, 96, 128)  # panel sizes at scale 1 and 2
TRAY_STYLES = ("color", "symbolic")

SYMBOLIC_INK = b"#2e3436"       # the symbolic SVGs' one colour: dark, for light panels
SYMBOLIC_INK_LIGHT = b"#f6f5f4"  # the same glyphs for dark panels
WAITING_FILL = b"#2f5fb3"
WAITING_DESTRUCTIVE_FILL = b"#b3261e"


class TrayState(StrEnum):
    IDLE = "idle"
    WAITING = "waiting"
    APPROVE_ALL = "approve-all"
    DENY_ALL = "deny-all"
    DO_NOT_DISTURB = "do-not-disturb"
    DEGRADED = "degraded"


MODE_STATES = {modes.APPROVE_ALL: TrayState.APPROVE_ALL, modes.DENY_ALL: TrayState.DENY_ALL,
               modes.DO_NOT_DISTURB: TrayState.DO_NOT_DISTURB}


def tray_state(mode: str, pending: int, degraded: bool) -> TrayState:
    """The state the tray shows: a standing mode first (it changes every answer), then trouble,
    then whether anything waits. The count is drawn on every state that has one."""
    if mode in MODE_STATES:
        return MODE_STATES[mode]
    if degraded:
        return TrayState.DEGRADED
    return TrayState.WAITING if pending else TrayState.IDLE


def resource_bytes(*parts: str) -> bytes:
    """A file of the installed ``desktop_approver.resources`` package."""
    path = resources.files(RESOURCES)
    for part in parts:
        path = path / part
    return path.read_bytes()


@functools.lru_cache(maxsize=1)
def app_icon() -> QIcon:
    """The application icon: the PNG of each size, which Qt reads when a window first needs that size.

    The tray app usually idles with no window open: decoding all eight at start would hold a
    megabyte of pixels for nothing (issue 23).
    """
    icon = QIcon()
    package = resources.files(RESOURCES)
    for size in APP_ICON_SIZES:
        png = package / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "desktop-approver.png"
        if isinstance(png, Path):  # files on disk (a wheel, a checkout, a PyInstaller bundle): read on demand
            icon.addFile(str(png), QSize(size, size))
        else:  # inside an archive: decoded now; naming the format spares Qt loading every image plugin to guess it
            pixmap = QPixmap()
            pixmap.loadFromData(png.read_bytes(), "PNG")
            icon.addPixmap(pixmap)
    return icon


def panel_is_dark() -> bool:
    """Whether the desktop uses a dark scheme (our best guess at the panel behind the tray)."""
    app = QGuiApplication.instance()
    if app is None:
        return False
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme != Qt.ColorScheme.Unknown:
        return scheme == Qt.ColorScheme.Dark
    return QGuiApplication.palette().window().color().lightness() < 128


def tray_icon(state: TrayState, pending: int = 0, *, destructive: bool = False, style: str = "color",
              dark_panel: bool | None = None) -> QIcon:
    """The tray icon for ``state``, with ``pending`` drawn on it when there is something waiting."""
    if style not in TRAY_STYLES:
        raise ValueError(f"unknown tray icon style {style!r} (one of {', '.join(TRAY_STYLES)})")
    if style == "symbolic" and dark_panel is None:
        dark_panel = panel_is_dark()
    return _tray_icon(TrayState(state), max(0, pending), destructive, style, bool(dark_panel))


@functools.lru_cache(maxsize=256)
def _tray_icon(state: TrayState, pending: int, destructive: bool, style: str, dark_panel: bool) -> QIcon:
    icon = QIcon()
    for size in TRAY_PIXEL_SIZES:
        icon.addPixmap(QPixmap.fromImage(tray_image(state, pending, size, destructive=destructive,
                                                    style=style, dark_panel=dark_panel)))
    return icon


def tray_svg(state: TrayState, *, destructive: bool = False, style: str = "color", dark_panel: bool = False) -> bytes:
    """The SVG source of one tray state, recoloured for the panel and the risk."""
    name = state.value if style == "color" else f"{state.value}-symbolic"
    data = resource_bytes("icons", "tray", f"{name}.svg")
    if style == "color" and destructive and state is TrayState.WAITING:
        data = data.replace(WAITING_FILL, WAITING_DESTRUCTIVE_FILL)
    if style == "symbolic" and dark_panel:
        data = data.replace(SYMBOLIC_INK, SYMBOLIC_INK_LIGHT)
    return data


def tray_image(state: TrayState, pending: int, size: int, *, destructive: bool = False, style: str = "color",
               dark_panel: bool = False) -> QImage:
    """One tray icon rendered at ``size`` pixels square."""
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    renderer = QSvgRenderer(QByteArray(tray_svg(state, destructive=destructive, style=style, dark_panel=dark_panel)))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    renderer.render(painter, QRectF(0, 0, size, size))
    if pending:
        ink = QColor((SYMBOLIC_INK_LIGHT if dark_panel else SYMBOLIC_INK).decode())
        if state is TrayState.WAITING:
            _draw_count_on_shield(painter, pending, size, cut_out=style == "symbolic")
        else:
            _draw_count_badge(painter, pending, size, symbolic=style == "symbolic", ink=ink,
                              fill=QColor((WAITING_DESTRUCTIVE_FILL if destructive else WAITING_FILL).decode()))
    painter.end()
    return image


def count_label(pending: int) -> str:
    return str(pending) if pending < 100 else "99+"


def _fitted_font(painter: QPainter, text: str, box: QRectF) -> QFont:
    """The largest bold font whose ``text`` fits ``box`` (digits are what a glance must read)."""
    font = QFont(painter.font())
    font.setBold(True)
    pixels = box.height()
    while pixels > 5:
        font.setPixelSize(int(pixels))
        metrics = QFontMetricsF(font)
        if metrics.horizontalAdvance(text) <= box.width() and metrics.capHeight() <= box.height():
            break
        pixels -= 1
    return font


def _draw_text_centered(painter: QPainter, text: str, box: QRectF) -> None:
    font = _fitted_font(painter, text, box)
    painter.setFont(font)
    metrics = QFontMetricsF(font)
    x = box.center().x() - metrics.horizontalAdvance(text) / 2
    y = box.center().y() + metrics.capHeight() / 2  # digits sit on the baseline: centre their cap height
    painter.drawText(round(x), round(y), text)


def _draw_count_on_shield(painter: QPainter, pending: int, size: int, *, cut_out: bool) -> None:
    """The count, large, in the shield's body: white on colour, or a hole in the symbolic shield."""
    text = count_label(pending)
    box = QRectF(size * 0.22, size * 0.26, size * 0.56, size * 0.40)
    if cut_out:
        painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_DestinationOut)
        painter.setPen(QColor("black"))
    else:
        painter.setPen(QColor("white"))
    _draw_text_centered(painter, text, box)
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)


def _draw_count_badge(painter: QPainter, pending: int, size: int, *, symbolic: bool, ink: QColor,
                      fill: QColor) -> None:
    """A round badge with the count in the lower right, for states whose glyph fills the shield."""
    diameter = size * 0.56
    badge = QRectF(size - diameter, size - diameter, diameter, diameter)
    ring = size / 16
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_DestinationOut)
    painter.setBrush(QColor("black"))
    painter.drawEllipse(badge.adjusted(-ring, -ring, ring, ring))  # a gap so the badge reads apart
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)
    painter.setBrush(ink if symbolic else fill)
    painter.drawEllipse(badge)
    inner = badge.adjusted(diameter * 0.16, diameter * 0.22, -diameter * 0.16, -diameter * 0.22)
    if symbolic:
        painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_DestinationOut)
        painter.setPen(QColor("black"))
    else:
        painter.setPen(QColor("white"))
    _draw_text_centered(painter, count_label(pending), inner)
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)
