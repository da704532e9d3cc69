"""Hidden characters are shown, warned about, and map back to exactly what runs."""

from __future__ import annotations

import pytest

from desktop_approver.render.reveal import has_hidden, marker_text, reveal, unreveal

# (name, text, expected display, expected kind, words the warning must contain)
HIDDEN = [
    ("bidi override", "echo \u202eexe.txt", "echo <U+202E>exe.txt", "bidi", "right-to-left override"),
    ("bidi isolate", "ls \u2066x\u2069", "ls <U+2066>x<U+2069>", "bidi", "U+2066"),
    ("zero width space", "r\u200bm -rf /", "r<U+200B>m -rf /", "zero_width", "zero-width"),
    ("byte order mark", "\ufeffls", "<U+FEFF>ls", "zero_width", "U+FEFF"),
    ("soft hyphen", "cu\u00adrl", "cu<U+00AD>rl", "zero_width", "U+00AD"),
    ("ansi escape", "echo \x1b[8mhidden", "echo \\x1b[8mhidden", "ansi", "ANSI escape"),
    ("cyrillic a in cat", "c\u0430t /etc/passwd", "c<U+0430>t /etc/passwd", "lookalike", "CYRILLIC SMALL LETTER A"),
    ("cyrillic em in rm", "r\u043c -rf build", "r<U+043C> -rf build", "lookalike", "'rм'"),
    ("greek omicron", "ech\u03bf hi", "ech<U+03BF> hi", "lookalike", "GREEK SMALL LETTER OMICRON"),
    ("fullwidth letters", "\uff52\uff4d x", "<U+FF52><U+FF4D> x", "lookalike", "FULLWIDTH"),
    ("40 spaces push a tail", "ls" + " " * 40 + "; rm -rf ~", "ls⟨40 spaces⟩; rm -rf ~", "spaces",
     "run of 40 spaces"),
    ("trailing spaces", "make test   ", "make test⟨3 spaces⟩", "trailing", "trailing"),
    ("C1 control", "a\x9bb", "a\\x9bb", "control", "\\x9b"),
    ("C0 control", "a\x07b", "a\\x07b", "control", "\\x07"),
    ("DEL", "a\x7fb", "a\\x7fb", "control", "\\x7f"),
    ("carriage return", "echo safe\rrm -rf ~", "echo safe\\rrm -rf ~", "control", "\\r"),
    ("newline in a command", "ls\nrm -rf ~", "ls\\nrm -rf ~", "newline", "line break"),
    ("tab", "ls\t-l", "ls\\t-l", "tab", "tab"),
    ("no-break space", "rm -rf\u00a0/", "rm -rf<U+00A0>/", "odd_space", "U+00A0"),
    ("tag character", "ok\U000e0041", "ok<U+E0041>", "invisible", "U+E0041"),
    ("line separator", "a\u2028b", "a<U+2028>b", "odd_space", "U+2028"),
]


@pytest.mark.parametrize("name, text, shown, kind, words", HIDDEN, ids=[case[0] for case in HIDDEN])
def test_hidden_characters_are_shown_and_warned(name: str, text: str, shown: str, kind: str, words: str) -> None:
    found = reveal(text)
    assert found.text == shown
    assert kind in found.kinds
    assert any(words in warning for warning in found.warnings), found.warnings
    assert has_hidden(text)


@pytest.mark.parametrize("text", [case[1] for case in HIDDEN] + [
    "plain", "", "  lead", "a" + " " * 9 + "b" + "\u202e" * 3 + "\n\t\x1b]0;x\x07",
    "\u0441\u043e\u0440 rм \ufeff", "x\r\n", "⟨3 spaces⟩ literal <U+202E> text \\x1b",
])
def test_segments_map_back_to_the_exact_text(text: str) -> None:
    for multiline in (False, True):
        found = reveal(text, multiline=multiline)
        assert unreveal(found.segments) == text
        assert "".join(text[a:b] for a, b in found.spans) == text
        assert "".join(part for part, _marker in found.segments) == found.text


def test_plain_text_is_untouched() -> None:
    found = reveal("git commit -m 'fix: parse args'")
    assert found.text == "git commit -m 'fix: parse args'"
    assert found.warnings == ()
    assert found.segments == [("git commit -m 'fix: parse args'", False)]
    assert not has_hidden("ls -la /tmp")


def test_words_in_another_script_are_not_look_alikes() -> None:
    assert reveal("echo привет мир").warnings == ()
    assert reveal("git commit -m 'Ελληνικά'").warnings == ()


def test_a_word_made_only_of_look_alikes_is_flagged() -> None:
    # "сор" in Cyrillic reads as Latin "cop".
    assert "lookalike" in reveal("\u0441\u043e\u0440 file").kinds


def test_multiline_text_keeps_newlines_tabs_and_indentation() -> None:
    text = "def f():\n\treturn 1\n" + " " * 12 + "x = 2\n"
    found = reveal(text, multiline=True)
    assert found.text == text
    assert found.warnings == ()


def test_multiline_shows_a_crlf_ending_without_a_warning() -> None:
    found = reveal("line\r\n", multiline=True)
    assert found.text == "line\\r\n"
    assert found.warnings == ()
    assert "line_ending" in found.kinds


def test_one_warning_line_per_kind() -> None:
    found = reveal("\u202ea\u202eb\u202ec \x1b[1m \x1b[2m")
    assert len(found.warnings) == 2
    assert found.warnings[0].startswith("contains a right-to-left override")


def test_markers_are_styled_apart_from_literal_marker_text() -> None:
    found = reveal("<U+202E> \u202e")
    assert found.segments == [("<U+202E> ", False), ("<U+202E>", True)]


def test_marker_text_rejects_non_markers() -> None:
    assert marker_text("⟨1 space⟩") == " "
    assert marker_text("<U+E0041>") == "\U000e0041"
    with pytest.raises(ValueError):
        marker_text("<not a marker>")


def test_long_space_runs_can_be_left_alone() -> None:
    assert reveal("a" + " " * 20 + "b", spaces=False).text == "a" + " " * 20 + "b"
