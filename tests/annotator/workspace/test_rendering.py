"""Message text is rendered as runs that carry their code-point offsets.

The browser's parser would turn the CR of old rows into LF and drop NUL, so those characters get a
run of their own; every other run's text must be the stored text exactly.
"""

import html
import re

import pytest

from annotator.rendering import Mark, highlight, text_runs

RUN = re.compile(r'<span class="run( ctl)?" data-from="(\d+)" data-to="(\d+)"(?: title="[^"]*")?>(.*?)</span>', re.S)


def runs(markup: str) -> list[tuple[bool, int, int, str]]:
    return [(bool(ctl), int(a), int(b), html.unescape(t)) for ctl, a, b, t in RUN.findall(markup)]


@pytest.mark.parametrize("text", [
    "Hello\r\nmy name is Fred Smith\r\nand I live in Paris",
    "one\rtwo\r\r\nFred\x00Smith\x07\x7f",
    "\U0001F600 José Garci\u0301a\t<b>&amp;</b> \u05d3\u05d5\u05d3",
])
def test_runs_cover_the_text_and_keep_every_other_character(text):
    marks = [Mark(text.index(w), text.index(w) + len(w), "NAME") for w in ("Fred", "José") if w in text]
    got = runs(highlight(text, marks))
    assert [a for _, a, _, _ in got] == sorted(a for _, a, _, _ in got)
    assert got[0][1] == 0 and got[-1][2] == len(text)
    assert all(b == a for (_, _, b, _), (_, a, _, _) in zip(got, got[1:], strict=False))  # no gap, no overlap
    for ctl, a, b, shown in got:
        if not ctl:
            assert shown == text[a:b]
        else:
            assert text[a:b] in ("\r", "\r\n") and shown == "\n" or len(shown) == 1 and 0x2400 <= ord(shown) <= 0x2421


def test_control_characters_get_a_visible_stand_in():
    assert runs(text_runs("a\x00b\r\nc")) == [
        (False, 0, 1, "a"), (True, 1, 2, "\u2400"), (False, 2, 3, "b"), (True, 3, 5, "\n"), (False, 5, 6, "c")]
