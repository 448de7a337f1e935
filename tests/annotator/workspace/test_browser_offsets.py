"""Selections map to the right code-point offsets in Chromium.

The browser's DOM is not the stored text: the HTML parser turns CRLF into LF, and JavaScript
counts UTF-16 units where the server counts code points. Messages with CRLF and lone CR (stored
before imports normalised them), tabs, emoji, combining marks and right-to-left script are labelled
in the workspace and in adjudication; every stored span must be exactly the text selected.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotator.models import AdjudicationItem, Annotation, Assignment, Dialogue, GoldSpan, Message
from annotator.models.corpus import default_taxonomy
from annotator.selectors.keymap import label_keys
from annotator.services.adjudication import gold_merge_ready
from tests.annotator.helpers import label

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# (text as stored, words to select in it). The CRs are written as they were before imports
# normalised them: old rows keep them.
TEXTS = [
    ("Hello\r\nmy name is Fred Smith\r\nand I live in Paris", ["Paris", "Fred", "Smith\nand"]),
    ("one\rtwo\r\rFred\rSmith", ["Smith", "two"]),
    ("Name:\tJose\u0301 Garci\u0301a\tage\t12", ["Garci\u0301a", "Jose\u0301"]),
    ("\U0001F600\U0001F600 hi \U0001F469\u200d\U0001F469\u200d\U0001F467 Maria \U0001F389 Lopez", ["Lopez", "Maria"]),
    ("\u0627\u0633\u0645\u064a \u0641\u0627\u0637\u0645\u0629 and \u05d3\u05d5\u05d3 \u05db\u05d4\u05df ok",
     ["\u05db\u05d4\u05df", "\u0641\u0627\u0637\u0645\u0629"]),
]


THIRD_WORD = {2: "Garci\u0301a", 3: "Lopez"}  # what → → → selects, word by word
OTHER_KEY = {lk.label: lk.key for lk in label_keys(default_taxonomy())}["OTHER_IDENTIFIER"]
DRAGGED = {"Paris", "Lopez"}  # selected with a real mouse drag in the workspace; the rest by a DOM range


def stored(text: str) -> str:
    """What the browser shows of a stored text: its line breaks as LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@pytest.fixture
def messages(project):
    d = Dialogue.objects.create(project=project, external_id="o1")
    return [Message.objects.create(dialogue=d, project=project, position=i, speaker="Student", text=t)
            for i, (t, _) in enumerate(TEXTS)]


def login(page, server, user: str, next_url: str) -> None:
    page.goto(f"{server.url}/accounts/login/?next={next_url}")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", f"pw-{user}")
    page.click("form button.primary")


def select_word(page, root: str, word: str) -> None:
    """Select ``word`` in the element ``root`` with a DOM range (as a mouse drag would), found in the
    rendered text, never through the app's own offsets; the words may span several text nodes."""
    found = page.evaluate(
        """([root, word]) => {
            const el = document.querySelector(root);
            const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
            const nodes = []; let t, all = '';
            while ((t = walker.nextNode())) {
              if (t.parentElement.closest('.tag')) continue;
              nodes.push([t, all.length]); all += t.data;
            }
            const at = all.indexOf(word);
            if (at < 0) return all;
            const point = (i, end) => {
              for (const [n, s] of nodes) if (end ? i <= s + n.data.length : i < s + n.data.length) return [n, i - s];
            };
            const [a, ao] = point(at, false), [b, bo] = point(at + word.length, true);
            const r = document.createRange(); r.setStart(a, ao); r.setEnd(b, bo);
            const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(r);
            return null;
        }""",
        [root, word],
    )
    assert found is None, f"{word!r} is not in {found!r}"
    assert page.evaluate("window.getSelection().toString()") == word


def drag_over(page, root: str, word: str) -> None:
    """Select ``word`` (one text node, left to right) with a real mouse drag."""
    box = page.evaluate(
        """([root, word]) => {
            const walker = document.createTreeWalker(document.querySelector(root), NodeFilter.SHOW_TEXT);
            let t;
            while ((t = walker.nextNode())) {
              const at = t.data.indexOf(word);
              if (at < 0) continue;
              const r1 = document.createRange(); r1.setStart(t, at); r1.setEnd(t, at + 1);
              const r2 = document.createRange(); r2.setStart(t, at + word.length - 1); r2.setEnd(t, at + word.length);
              const p = r1.getBoundingClientRect(), q = r2.getBoundingClientRect();
              return {x1: p.left + 1, y1: p.top + p.height / 2, x2: q.right - 1, y2: q.top + q.height / 2};
            }
        }""",
        [root, word],
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move(box["x2"], box["y2"], steps=6)
    page.mouse.up()
    assert page.evaluate("window.getSelection().toString()") == word


def test_workspace_spans_are_the_selected_text(live_server, browser_page, members, messages):
    page = browser_page
    me = members["annotator"]
    items = [Assignment.objects.create(project=m.project, annotator=me, message=m, condition="blind")
             for m in messages]
    login(page, live_server, "annotator", f"/p/test/item/{items[0].public_id}/")
    for item, (text, words) in zip(items, TEXTS, strict=True):
        page.goto(f"{live_server.url}/p/test/item/{item.public_id}/")
        page.wait_for_selector("#ws[data-ready] #target-text")
        for n, word in enumerate(words, start=1):
            (drag_over if word in DRAGGED else select_word)(page, "#target-text", word)
            page.keyboard.press("x")  # exact characters: no snapping to words
            page.keyboard.press("1")  # NAME
            expect(page.locator("#ws-spans [data-focus]")).to_have_count(n)
        spans = Annotation.objects.filter(assignment=item).order_by("pk")
        assert [stored(text[a.start:a.end]) for a in spans] == words
        if item.message.position in THIRD_WORD:
            page.reload()  # a fresh page: no caret after a span, so → counts from the first word
            page.wait_for_selector("#ws[data-ready] #target-text")
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            assert page.evaluate("window.getSelection().toString()") == THIRD_WORD[item.message.position]


def test_adjudication_spans_are_the_selected_text(live_server, browser_page, members, messages):
    for m, (text, words) in zip(messages, TEXTS, strict=True):
        start = text.index(words[0])  # one annotator marked the first word, the other nothing
        label(members["annotator"], m, [(start, start + len(words[0]), "NAME")])
        label(members["annotator2"], m, [])
    gold_merge_ready(project=messages[0].project)
    page = browser_page
    login(page, live_server, "adjudicator", "/p/test/adjudication/")
    for m, (text, words) in zip(messages, TEXTS, strict=True):
        item = AdjudicationItem.objects.get(message=m)
        page.goto(f"{live_server.url}/p/test/adjudication/{item.pk}/")
        page.wait_for_selector("#adj-form[data-ready]")
        added = [w for w in words[1:] if "\n" not in w]  # the adjudicator adds whole words
        for n, word in enumerate(added, start=1):
            select_word(page, "#adj-target", word)
            page.keyboard.press(OTHER_KEY)
            expect(page.locator("#adj-candidates li.added")).to_have_count(n)
        values = page.eval_on_selector_all("#adj-candidates li.added input", "els => els.map(e => e.value)")
        assert [stored(text[int(v.split(':')[0]):int(v.split(':')[1])]) for v in values] == added
        page.keyboard.press("Shift+Enter")
        page.wait_for_url(lambda url, here=f"/adjudication/{item.pk}/": here not in url)
        gold = GoldSpan.objects.filter(message=m, label="OTHER_IDENTIFIER").order_by("start")
        assert sorted(stored(text[g.start:g.end]) for g in gold) == sorted(added)


QUESTION = "What is 9755 x 468?"


def test_a_drag_past_the_end_of_a_message_leaves_out_its_punctuation(live_server, browser_page, members, project):
    """A drag from a word to beyond the end of the message (into the next one) takes the "?" with
    it; the span, in the workspace and in adjudication, ends at the last word."""
    d = Dialogue.objects.create(project=project, external_id="q1")
    m = Message.objects.create(dialogue=d, project=project, position=0, speaker="Tutor", text=QUESTION)
    Message.objects.create(dialogue=d, project=project, position=1, speaker="Student", text="by hand?")
    item = Assignment.objects.create(project=project, annotator=members["annotator"], message=m, condition="blind")
    page = browser_page
    login(page, live_server, "annotator", f"/p/test/item/{item.public_id}/")
    page.wait_for_selector("#ws[data-ready] #target-text")
    start = page.evaluate("""() => {
        const walker = document.createTreeWalker(document.getElementById('target-text'), NodeFilter.SHOW_TEXT);
        let t; while ((t = walker.nextNode())) { const at = t.data.indexOf('9755'); if (at >= 0) {
          const r = document.createRange(); r.setStart(t, at); r.setEnd(t, at + 1);
          const b = r.getBoundingClientRect(); return {x: b.left + 1, y: b.top + b.height / 2}; } }
    }""")
    after = page.locator(".msg.context .text").bounding_box()  # the next message, below the target
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(after["x"] + 20, after["y"] + after["height"] / 2, steps=8)
    page.mouse.up()
    assert page.evaluate("window.getSelection().toString()").startswith("9755 x 468?")
    page.keyboard.press(OTHER_KEY)
    expect(page.locator("#ws-spans [data-focus]")).to_have_count(1)
    ann = Annotation.objects.get(assignment=item)
    assert QUESTION[ann.start:ann.end] == "9755 x 468"

    page.keyboard.press("Enter")  # submitted: the other annotator marked nothing, so it is a disagreement
    page.wait_for_url(lambda url: str(item.public_id) not in url)
    label(members["annotator2"], m, [])
    gold_merge_ready(project=project)
    adj = AdjudicationItem.objects.get(message=m)
    page.context.clear_cookies()
    login(page, live_server, "adjudicator", f"/p/test/adjudication/{adj.pk}/")
    page.wait_for_selector("#adj-form[data-ready]")
    page.evaluate("""() => {  // from "9755" to past the end of the message
        const run = document.querySelector('#adj-target .run'), t = run.firstChild;
        const r = document.createRange(); r.setStart(t, t.data.indexOf('9755'));
        r.setEndAfter(document.querySelector('#adj-target').closest('li').nextElementSibling);
        const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(r);
    }""")
    page.keyboard.press(OTHER_KEY)
    added = page.locator("#adj-candidates li.added input")
    assert added.get_attribute("value") == f"{ann.start}:{ann.end}:OTHER_IDENTIFIER"
