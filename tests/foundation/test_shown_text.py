"""Text another program sends is shown as text: no terminal escapes act, no half emoji breaks saving."""

from __future__ import annotations

from strata_gui.core.base.texts import shown, well_formed


def test_terminal_escapes_become_visible_and_layout_stays() -> None:
    # "conceal" (ESC [8m) would hide the next question on a terminal; a bidi override reorders it.
    sent = "done\x1b[8m\tnext\nline\u202eevil\x9b2J\x07"
    out = shown(sent)
    assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out and "\x07" not in out
    assert out == "done\\x1b[8m\tnext\nline\\u202eevil\\x9b2J\\x07"


def test_half_an_emoji_becomes_a_replacement_character_that_encodes() -> None:
    for text in ("a\ud83db", "caf\udce9"):  # a JSON \ud83d; a Latin-1 byte kept by Python's surrogateescape
        fixed = well_formed(text)
        assert "\ufffd" in fixed
        fixed.encode("utf-8")  # raised UnicodeEncodeError before
        assert shown(text) == fixed


def test_ordinary_text_is_returned_unchanged() -> None:
    text = "Grüße 👋 — tab\there, 中文"
    assert shown(text) is text or shown(text) == text
    assert well_formed(text) is text


def test_json_text_keeps_its_data_and_loses_what_a_terminal_acts_on() -> None:
    import json

    from strata_gui.core.base.texts import shown_json

    value = {"result": "ok\x1b[8m\x9b\u202e\ud83d 中文", "n": 1}
    out = shown_json(json.dumps(value, ensure_ascii=False))
    assert not any(c in out for c in "\x1b\x9b\u202e\ud83d") and "中文" in out
    assert json.loads(out) == value
