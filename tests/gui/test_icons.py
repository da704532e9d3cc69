"""Icons from the installed package: the app icon at every size, a tray icon per state with the
count drawn on it, colour and symbolic looks for light and dark panels, crisp at scale 2."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.decisions import modes

pytestmark = pytest.mark.usefixtures("qapp")


def _pixels(image: Any) -> bytes:
    from PySide6.QtGui import QImage

    converted = image.convertToFormat(QImage.Format.Format_ARGB32)
    return bytes(converted.constBits())


def _opaque_share(image: Any) -> float:
    """The share of pixels with any ink: an icon that rendered nothing has none."""
    data = _pixels(image)
    alphas = data[3::4]
    return sum(1 for alpha in alphas if alpha > 0) / len(alphas)


@pytest.mark.parametrize(("mode", "pending", "degraded", "state"), [
    (modes.INTERACTIVE, 0, False, "idle"),
    (modes.INTERACTIVE, 2, False, "waiting"),
    (modes.INTERACTIVE, 0, True, "degraded"),
    (modes.INTERACTIVE, 2, True, "degraded"),
    (modes.APPROVE_ALL, 1, True, "approve-all"),
    (modes.DENY_ALL, 0, False, "deny-all"),
    (modes.DO_NOT_DISTURB, 5, False, "do-not-disturb"),
])
def test_the_state_a_tray_shows(mode: str, pending: int, degraded: bool, state: str) -> None:
    from desktop_approver.gui.icons import tray_state

    assert tray_state(mode, pending, degraded).value == state


def test_icons_come_from_the_installed_package() -> None:
    from desktop_approver.gui import icons

    package = resources.files(icons.RESOURCES)
    for state in icons.TrayState:
        assert (package / "icons" / "tray" / f"{state.value}.svg").is_file()
        assert (package / "icons" / "tray" / f"{state.value}-symbolic.svg").is_file()
    app = icons.app_icon()
    sizes = {(size.width(), size.height()) for size in app.availableSizes()}
    assert sizes == {(n, n) for n in icons.APP_ICON_SIZES}


def test_every_state_renders_distinctly_in_both_looks_at_every_size() -> None:
    from desktop_approver.gui import icons

    for style, dark in (("color", False), ("symbolic", False), ("symbolic", True)):
        for size in icons.TRAY_PIXEL_SIZES:
            seen = set()
            for state in icons.TrayState:
                image = icons.tray_image(state, 0, size, style=style, dark_panel=dark)
                assert (image.width(), image.height()) == (size, size)
                assert _opaque_share(image) > 0.3, (state, style, size)
                seen.add(_pixels(image))
            assert len(seen) == len(icons.TrayState), (style, size)


def test_the_count_is_drawn_and_changes_the_icon() -> None:
    from desktop_approver.gui import icons

    for style in icons.TRAY_STYLES:
        for state in (icons.TrayState.WAITING, icons.TrayState.DO_NOT_DISTURB):
            drawn = {_pixels(icons.tray_image(state, n, 22, style=style)) for n in (0, 1, 7, 42, 100, 500)}
            assert len(drawn) == 5, (style, state)  # 100 and 500 both read "99+"
    assert icons.count_label(100) == "99+" and icons.count_label(99) == "99"


def test_symbolic_icons_are_dark_on_light_panels_and_light_on_dark_ones() -> None:
    from desktop_approver.gui import icons

    def mean_lightness(image: Any) -> float:
        data = _pixels(image)
        inked = [(data[i] + data[i + 1] + data[i + 2]) / 3 for i in range(0, len(data), 4) if data[i + 3] == 255]
        return sum(inked) / len(inked)

    dark_ink = icons.tray_image(icons.TrayState.IDLE, 0, 32, style="symbolic", dark_panel=False)
    light_ink = icons.tray_image(icons.TrayState.IDLE, 0, 32, style="symbolic", dark_panel=True)
    assert mean_lightness(dark_ink) < 80 < 200 < mean_lightness(light_ink)


def test_tray_icon_has_native_pixels_for_scale_two() -> None:
    from desktop_approver.gui import icons

    icon = icons.tray_icon(icons.TrayState.WAITING, 3)
    sizes = {size.width() for size in icon.availableSizes()}
    assert {16, 22, 24, 32, 44, 48, 64} <= sizes  # 22 at scale 2 is a 44-pixel drawing, not an upscale
    with pytest.raises(ValueError, match="unknown tray icon style"):
        icons.tray_icon(icons.TrayState.IDLE, style="sparkly")


def test_the_tray_follows_mode_count_and_trouble(approver: Any) -> None:
    tray = approver.tray
    assert tray.state.value == "idle"
    approver.service.mode.set(modes.DENY_ALL, reason="test")
    assert tray.state.value == "deny-all" and "deny all" in tray.toolTip()
    approver.service.mode.set(modes.INTERACTIVE, reason="test")
    tray.set_degraded("No desktop notifications")
    assert tray.state.value == "degraded" and "No desktop notifications" in tray.toolTip()
    tray.set_degraded(None)
    assert tray.state.value == "idle"


@pytest.mark.logs("degraded", "works again")  # the service says so on stderr, too
def test_an_audit_log_that_cannot_be_written_shows_degraded_until_it_can(approver: Any) -> None:
    audit = approver.service.audit
    audit._db.execute("CREATE TRIGGER refuse BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
    with pytest.raises(Exception, match="disk says no"):
        audit.record_event("test")
    assert approver.tray.state.value == "degraded"
    assert "audit log cannot be written" in approver.tray.toolTip() and "disk says no" in approver.tray.toolTip()
    approver.set_trouble("notifications", "No desktop notifications")
    audit._db.execute("DROP TRIGGER refuse")
    audit.record_event("test")
    assert approver.tray.state.value == "degraded"  # notifications are still missing
    assert "audit" not in approver.tray.toolTip()
    approver.set_trouble("notifications", None)
    assert approver.tray.state.value == "idle"


def test_the_app_icon_from_an_archive_has_every_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files on disk are read when a window needs them; icons inside an archive (a zipped install)
    are decoded at once, as PNG by name: either way every size is there."""
    import zipfile

    from desktop_approver.gui import icons

    archive = tmp_path / "resources.zip"
    with zipfile.ZipFile(archive, "w") as written:
        for size in icons.APP_ICON_SIZES:
            name = f"icons/hicolor/{size}x{size}/apps/desktop-approver.png"
            written.writestr(name, icons.resource_bytes(*name.split("/")))
    with zipfile.ZipFile(archive) as opened:
        monkeypatch.setattr(icons.resources, "files", lambda _package: zipfile.Path(opened))
        app = icons.app_icon.__wrapped__()
        sizes = {(size.width(), size.height()) for size in app.availableSizes()}
        assert sizes == {(n, n) for n in icons.APP_ICON_SIZES}
        assert not app.pixmap(48).isNull()
