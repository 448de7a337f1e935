"""Overlapping spans and suggestions are all shown.

The highlight used to skip a mark that overlapped an earlier one, so an overlapping suggestion
was only listed by its text. Now every mark covers exactly its characters (nested, or split into
parts where two cross), the runs keep their offsets, and the workspace lists say what overlaps what.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from annotator.models import Prediction
from annotator.rendering import Mark, context, highlight, layers, overlapping
from tests.annotator.workspace.test_rendering import runs

TEXT = "Hi Maria Lopez, mail maria.lopez@example.org today"


class Tree(HTMLParser):
    """Which marks enclose each run; how many label tags and parts each mark has; well-formedness."""

    def __init__(self):
        super().__init__()
        self.stack: list[tuple] = []
        self.cover: dict[tuple, set[int]] = {}
        self.parts: dict[tuple, int] = {}
        self.tags: dict[tuple, int] = {}
        self.layer: dict[tuple, int] = {}
        self.in_tag = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "mark":
            key = (int(a["data-start"]), int(a["data-end"]), a["data-label"], a.get("data-suggestion"))
            self.parts[key] = self.parts.get(key, 0) + 1
            self.layer[key] = int(a["data-layer"])
            self.stack.append(key)
        elif tag == "span" and "run" in a.get("class", "").split():
            for key in self.stack:
                self.cover.setdefault(key, set()).update(range(int(a["data-from"]), int(a["data-to"])))
        elif tag == "span" and a.get("class") == "tag":
            self.tags[self.stack[-1]] = self.tags.get(self.stack[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "mark":
            self.stack.pop()


def parse(markup: str) -> Tree:
    t = Tree()
    t.feed(markup)
    t.close()
    assert t.stack == []
    return t


CASES = {
    "nested": [Mark(3, 14, "NAME"), Mark(3, 8, "NAME", "suggestion", {"data-suggestion": "1"}),
               Mark(9, 14, "NAME", "suggestion", {"data-suggestion": "2"})],
    "crossing": [Mark(3, 14, "NAME"), Mark(9, 44, "EMAIL", "suggestion", {"data-suggestion": "1"}),
                 Mark(21, 50, "URL", "suggestion", {"data-suggestion": "2"})],
    "same range": [Mark(3, 8, "NAME", "suggestion", {"data-suggestion": "1"}),
                   Mark(3, 8, "USERNAME", "suggestion", {"data-suggestion": "2"})],
    "apart": [Mark(3, 8, "NAME"), Mark(21, 44, "EMAIL")],
}


@pytest.mark.parametrize("case", CASES)
def test_every_mark_covers_exactly_its_characters(case):
    marks = CASES[case]
    markup = str(highlight(TEXT, marks))
    tree = parse(markup)
    for m in marks:
        key = (m.start, m.end, m.label, (m.attrs or {}).get("data-suggestion"))
        assert tree.cover[key] == set(range(m.start, m.end)), key
        assert tree.tags[key] == 1  # one label tag, on the last part
    got = runs(markup)  # the runs' offset contract: the whole text, in order, each run its own text
    assert got[0][1] == 0 and got[-1][2] == len(TEXT)
    assert all(b == a for (_, _, b, _), (_, a, _, _) in zip(got, got[1:], strict=False))
    assert all(shown == TEXT[a:b] for _, a, b, shown in got)


def test_crossing_marks_are_split_and_overlapping_ones_never_share_a_layer():
    marks = CASES["crossing"]
    tree = parse(str(highlight(TEXT, marks)))
    assert tree.parts[(9, 44, "EMAIL", "1")] == 2 and tree.parts[(21, 50, "URL", "2")] == 2
    assert 'data-part="cont"' in str(highlight(TEXT, marks))
    lay = layers(marks)
    for i, others in enumerate(overlapping(marks)):
        assert all(lay[i] != lay[j] for j in others)
    assert overlapping(marks) == [[1], [0, 2], [1]]
    assert overlapping(CASES["apart"]) == [[], []] and layers(CASES["apart"]) == [0, 0]


def test_marks_outside_the_text_or_empty_are_left_out():
    markup = str(highlight("abc", [Mark(1, 1, "X"), Mark(2, 9, "Y"), Mark(0, 1, "Z")]))
    assert markup.count("<mark") == 1 and 'data-label="Z"' in markup


def test_context_cuts_at_spaces():
    c = context(TEXT, 21, 44, width=10)
    assert c["text"] == "maria.lopez@example.org"
    assert c["before"].startswith("…") and c["before"].endswith("mail ") and c["after"] == " today"


# ----------------------------------------------------------------------------------- the workspace

def item_url(a) -> str:
    return reverse("workspace-item", kwargs={"slug": a.project.slug, "public_id": a.public_id})


def add_overlapping(run, item) -> list[Prediction]:
    """"Hi Maria! Ready…": the run's NAME on "Maria" (3–8), plus one inside it and one crossing it."""
    return [Prediction.objects.get(run=run, message=item.message),
            Prediction.objects.create(run=run, message=item.message, start=3, end=5, label="USERNAME", score=.3),
            Prediction.objects.create(run=run, message=item.message, start=6, end=16, label="ID_NUMBER", score=.2)]


@pytest.mark.django_db
def test_aware_item_shows_every_overlapping_suggestion_and_says_what_it_overlaps(client, members, aware_item, run):
    preds = add_overlapping(run, aware_item)
    client.force_login(members["annotator"])
    body = client.get(item_url(aware_item)).content.decode()
    target = body[body.index('id="target-text"'):]
    target = target[:target.index("</div>")]
    tree = parse(target[target.index(">") + 1:])
    for p in preds:
        assert f'data-suggestion="{p.pk}"' in target
        assert tree.cover[(p.start, p.end, p.label, str(p.pk))] == set(range(p.start, p.end))
        assert f'id="ws-s{p.pk}"' in body and f'data-focus="s{p.pk}"' in body  # j / k reach it
        assert f"{p.start}–{p.end}" in body
    # NAME 3–8 overlaps both others; the list links to them by focus key
    name, inner, crossing = preds
    entry = body[body.index(f'id="ws-s{name.pk}"'):]
    entry = entry[:entry.index("</li>")]
    assert "Overlaps" in entry and f'data-focus-to="s{inner.pk}"' in entry and f'data-focus-to="s{crossing.pk}"' in entry
    entry = body[body.index(f'id="ws-s{inner.pk}"'):]
    entry = entry[:entry.index("</li>")]
    assert f'data-focus-to="s{name.pk}"' in entry and f'data-focus-to="s{crossing.pk}"' not in entry
    assert "<b>Maria</b>" in body  # the context line of the NAME suggestion


@pytest.mark.django_db
def test_own_span_lists_the_suggestions_it_overlaps(client, members, aware_item, run):
    from annotator.services import workspace as svc

    preds = add_overlapping(run, aware_item)
    span = svc.span_add(assignment=aware_item, user=members["annotator"], version=None, start=0, end=2,
                        label="NAME", exact=True)
    client.force_login(members["annotator"])
    body = client.get(item_url(aware_item)).content.decode()
    entry = body[body.index(f'id="ws-a{span.pk}"'):]
    entry = entry[:entry.index("</li>")]
    assert "Overlaps" not in entry  # "Hi" touches nothing
    svc.span_delete(assignment=aware_item, user=members["annotator"], version=None, annotation_id=span.pk)
    span = svc.span_add(assignment=aware_item, user=members["annotator"], version=None, start=0, end=4,
                        label="NAME", exact=True)
    body = client.get(item_url(aware_item)).content.decode()
    entry = body[body.index(f'id="ws-a{span.pk}"'):]
    entry = entry[:entry.index("</li>")]
    # the span recorded an edit of one suggestion (now decided, out of the text); the other stays
    edited = span.prediction_id
    still = next(p for p in preds[:2] if p.pk != edited)
    assert edited in (preds[0].pk, preds[1].pk)
    assert f'data-focus-to="s{still.pk}"' in entry and f'data-focus-to="s{edited}"' not in entry
    entry = body[body.index(f'id="ws-s{still.pk}"'):]
    assert f'data-focus-to="a{span.pk}"' in entry[:entry.index("</li>")]


@pytest.mark.django_db
def test_blind_item_shows_no_overlapping_suggestion(client, members, blind_item, run):
    add_overlapping(run, blind_item)
    client.force_login(members["annotator"])
    body = client.get(item_url(blind_item)).content.decode()
    assert "data-suggestion" not in body and "data-focus-to" not in body and "ID_NUMBER</span></mark>" not in body
    assert "Overlaps" not in body
