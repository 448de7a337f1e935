"""A release de-identified in parts (pipeline/surrogates/parts.py) is the one-pass release.

Each part gets the engine as it stood before its first dialogue, from the corpus's originals and
what the dialogues before it registered (or from the part before, in the same process); its files joined in order and its reports merged are the
one pass's, byte for byte. Without what earlier dialogues registered, a part misses an identifier
completed only in an earlier part (the control below)."""

from __future__ import annotations

import json

import pytest

from pipeline.surrogates.audit import ReleaseAudit
from pipeline.surrogates.batch import collect_spans, write_release
from pipeline.surrogates.engine import Deidentifier
from pipeline.surrogates.leaks import LeakChecker, LeakReport
from pipeline.surrogates.parts import (
    PartEngines,
    SpillFiles,
    merge_states,
    part_state,
    read_file,
    registrations,
)
from pipeline.synthetic import generate_messages
from pipeline.types import Dialogue, Message, Span
from tests.pipeline.test_release_audit import msg

KEY = "release-parts-key-0123"


# "jo.smith" is marked as an e-mail address in the first dialogue only in part: the engine completes
# it to the whole address and registers that; the fourth dialogue has the address unmarked.
FIRST = Dialogue("first", (
    msg(0, "write to jo.smith@example.org or call (555) 201-7788", [("jo.smith", "EMAIL"), ("201-7788", "PHONE")]),
    msg(1, "Maria, the answer is 9351 / 7 = 1335.857", [("Maria", "NAME")]),
), meta={"teacher": "Maria"})
LATER = Dialogue("later", (
    msg(0, "my old address jo.smith@example.org still works\u2028and my number is 555 201 7788"),
    msg(1, "If Maria has 5 apples and Mark has 3, how many?", [("Mark", "NAME")]),
))


def _corpus() -> list[Dialogue]:
    """The address completed at position 1 and found unmarked at 4: in another part for parts of
    one to three dialogues; with one-dialogue parts and two processes taking turns, the process
    that builds 4 built 0 and 2, not 1."""
    some, more = generate_messages(120, seed=5)[:3], generate_messages(120, seed=6)[:3]
    return [some[0], FIRST, *some[1:], LATER, *more]


def _spilled(tmp_path, dialogues, size):
    spill = SpillFiles(tmp_path / "parts-in", size)
    found = collect_spans(dialogues, None, spill)
    spill.close()
    return spill, found


def _written(folder, name):
    return {k: folder / f"{name}.{k}.jsonl" for k in ("release", "mapping", "candidates")}


def _one_pass(tmp_path, records, originals):
    deid = Deidentifier(key=KEY, forbidden=originals)
    audit = ReleaseAudit()
    paths = _written(tmp_path, "whole")
    checker, utility = write_release(records, deid, paths, originals=originals, audit=audit)
    return paths, checker, utility, deid


def _in_parts(tmp_path, spill, originals, registered, *, order="in order", processes=0):
    """Each part built (in ``order``, by ``processes`` taking turns, each with its
    :class:`PartEngines` going on from part to part, or by a process of its own), then joined in
    order."""
    built = {}
    indices = list(range(len(spill.chunks)))
    engines = [PartEngines() for _ in range(processes)]
    for turn, i in enumerate(reversed(indices) if order == "reversed" else indices):
        parts = engines[turn % processes] if processes else PartEngines()
        checker = parts.checker("release", originals)
        deid = parts.take("release", lambda: Deidentifier(key=KEY, forbidden=originals), registered, i * spill.size)
        paths = _written(tmp_path, f"part{i}")
        checker, utility = write_release(read_file(spill.folder / spill.chunks[i].name), deid, paths, checker=checker,
                                         audit=ReleaseAudit())
        parts.give_back("release", deid, i * spill.size + utility.dialogues)
        built[i] = paths, json.loads(json.dumps(part_state(deid, checker, utility)))  # as stored
    release, mapping, candidates = (b"".join(built[i][0][k].read_bytes() for i in indices)
                                    for k in ("release", "mapping", "candidates"))
    return release, mapping, candidates, merge_states(built[i][1] for i in indices)


@pytest.mark.parametrize(("size", "order", "processes"), [(1, "in order", 1), (2, "in order", 1), (1, "in order", 2),
                                                         (3, "in order", 0), (2, "reversed", 1)])
def test_parts_joined_in_order_are_the_one_pass_release_byte_for_byte(tmp_path, size, order, processes):
    """Parts built in order by one process (its engine going on from part to part), by two taking
    turns, each by a process of its own, or last part first: the same release."""
    spill, found = _spilled(tmp_path, _corpus(), size)
    paths, checker, utility, deid = _one_pass(tmp_path, spill.records(), found.originals)
    registered = registrations(Deidentifier(key=KEY, forbidden=found.originals), spill.records(),
                               known=found.originals)
    assert ["EMAIL", "jo.smith@example.org"] in [r[1:] for r in registered]  # completed, not in the first pass
    assert not any((label, text) in found.originals for _, label, text in registered)
    release, mapping, candidates, merged = _in_parts(tmp_path, spill, found.originals, registered, order=order,
                                                     processes=processes)

    assert release == paths["release"].read_bytes()
    assert mapping == paths["mapping"].read_bytes()
    assert candidates == paths["candidates"].read_bytes()
    assert merged.utility.to_dict() == utility.to_dict()
    assert merged.leaks.to_dict() == checker.report.to_dict()
    assert merged.fallbacks == deid.fallbacks
    assert b"jo.smith@example.org" not in release and b"Maria" not in release


def test_a_part_without_what_earlier_dialogues_registered_misses_their_completed_identifiers(tmp_path):
    """The control: the later dialogue's address is swept only because the first registered it."""
    spill, found = _spilled(tmp_path, _corpus(), 3)
    paths, *_ = _one_pass(tmp_path, spill.records(), found.originals)
    release, *_ = _in_parts(tmp_path, spill, found.originals, registered=[])
    assert release != paths["release"].read_bytes()
    assert b"@example.org still works" in release  # the original address, or a piece of it
    assert b"@example.org still works" not in paths["release"].read_bytes()


def test_the_spill_keeps_every_field_the_release_reads(tmp_path):
    """Roles, timestamps, meta, an anchor and a U+2028 inside a message survive the chunk files."""
    odd = Dialogue("D", (Message(text="line\u2028sep, 555-201-7788", speaker="Tutor", role="tutor", index=0,
                                 ts="2024-01-01T10:00", meta={"k": [1, "x"]}, spans=(Span(15, 27, "PHONE", 0.5, "x"),)),
                         msg(1, "and 4815162342 too")), anchor="Anchor 42", meta={"grade": 5})
    spill, _ = _spilled(tmp_path, [odd, LATER], 1)
    read = list(spill.records())
    assert [d for d, _ in read] == [odd, LATER]
    assert read[0][1] == [[Span(15, 27, "PHONE")], []]  # what the one-pass release reads back: no score


def test_leak_reports_of_parts_merge_into_the_report_of_the_whole():
    originals = [("NAME", "Maria Lopez"), ("PHONE", "555-201-7788")]
    texts = [Dialogue(str(i), (msg(0, f"{i}: Maria Lopez called 555-201-7788"),)) for i in range(5)]
    whole = LeakChecker(originals)
    for d in texts:
        whole.check_dialogue(d)
    merged = LeakReport()
    for part in (texts[:2], texts[2:3], texts[3:]):
        checker = LeakChecker(originals)
        for d in part:
            checker.check_dialogue(d)
        merged.merge(json.loads(json.dumps(checker.report.state())))
    assert merged.to_dict() == whole.report.to_dict() and whole.report.total_hits == 10
