"""The release audits itself (fragments, completion, second opinion, maths numbers,
capture-recapture)."""

import json
import random

from pipeline.metrics.capture import Chapman
from pipeline.surrogates.batch import deidentify_file, report_paths
from pipeline.surrogates.engine import Deidentifier
from pipeline.types import Dialogue, Message, Span

KEY = "release-audit-key-0123"


def msg(i, text, spans=()):
    return Message(text=text, index=i, spans=tuple(Span(text.index(w), text.index(w) + len(w), lab)
                                                  for w, lab in spans))


A = Dialogue("A", (
    msg(0, "Hi, my name is Maria Lopez and I am in Ms. Okafor's class.", [("Maria Lopez", "NAME"), ("Okafor", "NAME")]),
    msg(1, "Maria's dog is called Rex, he is 3 years old."),
    msg(2, "My mum says call her on (555) 201-7788 after 6.", [("201-7788", "PHONE")]),
    msg(3, "you can email me at jo.bloggs@example.org if you're stuck"),
))
B = Dialogue("B", (msg(0, "ok thanks, see you tomorrow Lopez"),))
C = Dialogue("C", (msg(0, "The total number of old records that the 5 people brought in is 14.", [("14", "AGE")]),))


def write(path, dialogues):
    with open(path, "w", encoding="utf-8") as fh:
        for d in dialogues:
            fh.write(json.dumps({"id": d.id, "messages": [
                {"text": m.text, "speaker": "student",
                 "spans": [{"start": s.start, "end": s.end, "label": s.label} for s in m.spans]}
                for m in d.messages]}) + "\n")
    return path


def release(tmp_path, **options):
    summary = deidentify_file(write(tmp_path / "in.jsonl", [A, B, C]), tmp_path / "out.jsonl", key=KEY, **options)
    with open(tmp_path / "out.jsonl", encoding="utf-8") as fh:
        # the release keys its ids (opaque under the key) and keeps the corpus's order
        texts = {d.id: [m["text"] for m in o["messages"]] for d, o in zip([A, B, C], map(json.loads, fh), strict=True)}
    return summary, texts


def test_name_fragments_are_replaced_by_the_matching_part(tmp_path):
    summary, texts = release(tmp_path, scope="corpus")
    first, last = texts["A"][0].split("my name is ")[1].split(" and")[0].split()
    assert texts["A"][1].startswith(f"{first}'s dog") and "Maria" not in texts["A"][1]
    assert texts["B"][0] == f"ok thanks, see you tomorrow {last}"


def test_fragment_in_another_dialogue_under_dialogue_scope_is_replaced(tmp_path):
    _, texts = release(tmp_path)
    assert "Lopez" not in texts["B"][0]


def test_common_word_part_is_a_candidate_not_replaced():
    d = Dialogue("W", (msg(0, "this is Will Page", [("Will Page", "NAME")]), msg(1, "ok so Will said no")))
    result = Deidentifier(key=KEY).deidentify(d)
    assert result.release.messages[1].text == "ok so Will said no"
    assert [(c.reason, c.text) for c in result.candidates] == [("fragment", "Will")]


def test_partial_phone_is_completed(tmp_path):
    _, texts = release(tmp_path)
    assert "(555)" not in texts["A"][2] and "7788" not in texts["A"][2]
    assert texts["A"][2].endswith(" after 6.")


def test_unmarked_email_is_a_second_opinion_candidate_without_strings_in_public_files(tmp_path):
    summary, texts = release(tmp_path)
    paths = report_paths(tmp_path / "out.jsonl")
    cands = [json.loads(line) for line in paths["candidates"].read_text().splitlines()]
    assert {"second_opinion": "jo.bloggs@example.org"}.items() <= {c["reason"]: c["text"] for c in cands}.items()
    assert not summary["publishable"] and summary["candidates"]["pending"] >= 2
    for name in ("summary", "leaks"):
        assert "jo.bloggs" not in paths[name].read_text() and "Maria" not in paths[name].read_text()
    dismissed = {c["key"] for c in cands}
    again, _ = release(tmp_path, dismissed=dismissed)
    assert again["candidates"]["pending"] == 0 and again["publishable"]


def test_maths_answer_is_not_replaced_and_utility_counts_it(tmp_path):
    summary, texts = release(tmp_path, audit=False)  # today's behaviour: "is 14" became another number
    assert not texts["C"][0].endswith("is 14.") and summary["utility"]["messages_numbers_changed"] >= 1
    summary, texts = release(tmp_path)
    assert texts["C"][0] == C.messages[0].text
    assert summary["candidates"]["by_reason"]["maths_number"] == 1
    assert summary["utility"]["messages_numbers_changed"] == 0


def test_text_outside_replacements_is_byte_identical(tmp_path):
    _, texts = release(tmp_path)
    assert texts["A"][0].endswith("'s class.") and texts["A"][3] == A.messages[3].text


def test_capture_recapture_interval_covers_the_truth_at_about_the_nominal_rate():
    covered = 0
    for seed in range(200):
        rng = random.Random(seed)
        a = [rng.random() < 0.8 for _ in range(200)]
        b = [rng.random() < 0.6 for _ in range(200)]
        m = sum(x and y for x, y in zip(a, b, strict=True))
        lo, hi = Chapman(sum(a), sum(b), m).interval()
        covered += lo <= 200 <= hi
    assert 0.88 <= covered / 200 <= 0.99


def test_audits_of_spilled_chunks_merged_in_order_are_the_audit_of_the_whole(tmp_path):
    """What the audit reads of each released dialogue survives the spill file exactly (roles,
    timestamps, meta, a U+2028 inside a message), and chunks audited apart then merged give the same
    counts, capture tally, listing and candidates file as one audit."""
    from pipeline.surrogates.audit import AuditSpill, ReleaseAudit, read_audit_inputs

    odd = Dialogue("D", (Message(text="line\u2028sep, mail a.b@example.org or call 555-201-7788", speaker="Tutor",
                                 role="tutor", index=0, ts="2024-01-01T10:00", meta={"k": [1, "x"]}),
                         msg(1, "and 4815162342 too")), anchor="Anchor 42", meta={"grade": 5})
    dialogues = [A, B, C, odd] * 3
    deid = Deidentifier(key=KEY)
    results = [deid.deidentify(d, [list(m.spans) for m in d.messages]) for d in dialogues]

    whole = ReleaseAudit(dismissed={results[0].candidates[0].key} if results[0].candidates else ())
    with open(tmp_path / "whole.jsonl", "w", encoding="utf-8") as out:
        whole.out = out
        for r in results:
            whole.check_many([r])

    spill = AuditSpill(tmp_path / "chunks", 5)
    for r in results:
        spill.check_many([r])
    spill.close()
    assert [len(c.dialogue_ids) for c in spill.chunks] == [5, 5, 2]
    merged = ReleaseAudit(dismissed=whole.dismissed_keys)
    with open(tmp_path / "merged.jsonl", "w", encoding="utf-8") as out:
        merged.out = out
        for i, chunk in enumerate(spill.chunks):
            part = ReleaseAudit(dismissed=whole.dismissed_keys)
            pending = []
            with open(tmp_path / "chunks" / chunk.name, encoding="utf-8") as fh:
                lines = [line for line in fh.read().split("\n") if line]
            read = list(read_audit_inputs(lines))
            assert [r.release for r in read] == [r.release for r in results[5 * i:5 * i + 5]]
            for r in read:
                pending.extend(part.check_many([r]))
            merged.merge(json.loads(json.dumps(part.counts())), pending)
    assert merged.to_dict() == whole.to_dict() and whole.total
    assert merged.capture.to_dict() == whole.capture.to_dict()
    assert (tmp_path / "merged.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()


def test_the_release_does_not_depend_on_the_order_originals_arrive_in():
    """The first pass hands the engine a set of originals, whose order changes with the hash seed:
    "Mark", "MARK" and "mark" registered in another order made "Mark" in a word problem a fragment
    candidate in one process and a replaced name in the next (20k generated messages differed in
    4 mapping rows and 3 candidates between PYTHONHASHSEED=1 and 2)."""
    import itertools

    d = Dialogue("X", (msg(0, "hi"), msg(1, "If Mark has 9 cookies and Chandran has 12, how many do they have?")))
    originals = [("NAME", "MARK"), ("NAME", "Mark"), ("NAME", "mark"), ("NAME", "Mark Green")]
    outcomes = set()
    for order in itertools.permutations(originals):
        r = Deidentifier(key=KEY, forbidden=list(order)).deidentify(d, [[], []])
        outcomes.add((tuple(m.text for m in r.release.messages), tuple(c.key for c in r.candidates)))
    assert len(outcomes) == 1, outcomes


def test_dialogues_audited_together_are_audited_as_one_at_a_time(tmp_path):
    """The second opinion reads a few released dialogues at once (Presidio's spaCy batches their
    messages): each dialogue's hits, candidates and capture tally are its own, as when audited alone."""
    from pipeline.registry import build
    from pipeline.surrogates.audit import (
        ReleaseAudit,
        SecondOpinion,
        default_second_opinion,
        in_batches,
    )

    dialogues = [A, B, C, Dialogue("E", (msg(0, "mail a.b@example.org, or ring 555-201-7788"),
                                         msg(1, "Dr. Amelia Brightwater teaches at Lincoln High in Boston")))] * 3
    deid = Deidentifier(key=KEY)
    results = [deid.deidentify(d, [list(m.spans) for m in d.messages]) for d in dialogues]
    second = SecondOpinion(default_second_opinion() + [build("presidio", {"preset": "tuned"})])
    audits = {}
    for how in ("alone", "together"):
        audits[how] = audit = ReleaseAudit(second_opinion=second)
        with open(tmp_path / f"{how}.jsonl", "w", encoding="utf-8") as out:
            audit.out = out
            if how == "alone":
                pending = [c for r in results for c in audit.check_many([r])]
            else:
                batches = list(in_batches(results, messages=5))
                assert 1 < len(batches) < len(results) and max(map(len, batches)) > 1
                pending = [c for batch in batches for c in audit.check_many(batch)]
        audits[how + " pending"] = pending
    assert {c.reason for c in audits["alone pending"]} >= {"second_opinion"}
    assert audits["together pending"] == audits["alone pending"]
    assert audits["together"].to_dict() == audits["alone"].to_dict()
    assert audits["together"].capture.to_dict() == audits["alone"].capture.to_dict()
    assert (tmp_path / "together.jsonl").read_bytes() == (tmp_path / "alone.jsonl").read_bytes()
