"""A release uses the best evidence there is per dialogue: the gold file's spans where the audit
reviewed it, the source's elsewhere; the residual risk is still what the source misses."""

import json

import pytest

from pipeline.registry import build
from pipeline.surrogates.batch import deidentify_file, report_paths

KEY = "release-gold-key-0123"
MILES = [
    ("Teacher", "Miles what did you say?"),
    ("Student", "I said 12 divided by 4 is 3"),
    ("Teacher", "Good, Miles. And Miles, why?"),
    ("Student", "because 4 times 3 is 12"),
    ("Teacher", "Thank you Miles."),
]


def lesson(dialogue_id, lines, *, names=False):
    """A lesson as the import format writes it; ``names`` marks every "Miles" (the audit's gold)."""
    messages = []
    for speaker, text in lines:
        spans = []
        if names:
            at = text.find("Miles")
            while at >= 0:
                spans.append({"start": at, "end": at + 5, "label": "NAME"})
                at = text.find("Miles", at + 1)
        messages.append({"speaker": speaker, "text": text, "spans": spans})
    return {"id": dialogue_id, "messages": messages}


def write(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def miles_corpus(folder):
    """Three lessons, the second the one with Miles, and the audit's gold file of that lesson."""
    other = [("Teacher", "What is 7 times 8?"), ("Student", "56")]
    lessons = [lesson("lesson-1", other), lesson("lesson-miles", MILES), lesson("lesson-3", other)]
    return write(folder / "corpus.jsonl", lessons), write(folder / "gold.jsonl",
                                                         [lesson("lesson-miles", MILES, names=True)])


@pytest.fixture
def corpus(tmp_path):
    return miles_corpus(tmp_path)


def test_a_miss_the_audit_found_is_fixed_in_the_release(tmp_path, corpus):
    """The audit's gold marks "Miles" four times in a sampled lesson that the detector missed
    entirely: the release reads no "Miles", raises no candidate for it, and the estimate still
    counts the four misses (the detector's, which the unreviewed lessons are released with)."""
    src, gold = corpus
    out = tmp_path / "release.jsonl"
    summary = deidentify_file(src, out, key=KEY, spans_for=build("rules"), gold=gold)
    released = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    texts = [m["text"] for m in released[1]["messages"]]
    assert not any("Miles" in t for t in texts), texts
    assert texts[1] == MILES[1][1]  # the maths stays
    assert summary["spans"] == 4
    candidates = report_paths(out)["candidates"].read_text(encoding="utf-8")
    assert "Miles" not in candidates and summary["candidates"]["pending"] == 0
    rr = summary["residual_risk"]
    assert rr["missed_found"] == 0  # the release itself holds none of them
    assert rr["strata"][0]["missed_if_unreviewed"] == 4 and rr["gold_found"] == 4
    assert rr["sentence"].startswith("4 miss(es) found in 5 reviewed messages (1 dialogue)")


def test_without_gold_the_miss_ships(tmp_path, corpus):
    """The same corpus without the audit: the detector's spans are all there is."""
    src, _ = corpus
    out = tmp_path / "release.jsonl"
    deidentify_file(src, out, key=KEY, spans_for=build("rules"))
    assert "Miles what did you say?" in out.read_text(encoding="utf-8")
