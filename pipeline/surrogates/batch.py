"""De-identify a corpus file into a release file, streaming, with its reports beside it.

Two passes over the input, so memory stays flat whatever the corpus size:

1. spans for every dialogue (its own spans, or a detector's) are spilled to a temporary file and
   the set of original PII strings is collected (it is what no surrogate may be, and what the
   leak check looks for);
2. each dialogue is de-identified, written, leak-checked and counted for the utility report.

Files written next to ``out`` (``RELEASE.jsonl``): ``RELEASE.leaks.json``,
``RELEASE.utility.json``, ``RELEASE.summary.json`` (counts and positions only: downloadable) and,
private — to be kept apart from the release, as they hold original strings —
``RELEASE.mapping.jsonl`` (the original → surrogate table, unless ``mapping=False``; anyone holding
it can undo the de-identification), ``RELEASE.candidates.jsonl`` (what the self-audit leaves for
review, :mod:`pipeline.surrogates.audit`) and ``RELEASE.leaks.private.json`` (the leak hits with
the strings found).

Pass 2 also audits the release (:class:`~pipeline.surrogates.audit.ReleaseAudit`): a second
opinion on the released text and the engine's own candidates; the release is publishable only
with no leak and no pending candidate. The summary's ``capture_recapture`` estimates what the
release's spans and an independent source both missed (:mod:`pipeline.metrics.capture`).

With ``gold`` (dialogues of the corpus with reviewed spans), the gold dialogues are released with
their gold spans (the best evidence there is for them: a miss the audit found is fixed) and the
summary estimates the residual risk of the rest: what the source's spans miss, per 1,000
messages, with an upper bound (:mod:`pipeline.metrics.residual`); without it, it says there is
nothing to estimate from.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pipeline import csvsafe
from pipeline.corpus import CorpusError, CorpusProblem, dialogue_to_obj
from pipeline.formats import read_corpus
from pipeline.formats.native import iter_jsonl_dialogues
from pipeline.metrics.residual import Stratum, estimate_residual, uncovered
from pipeline.surrogates.audit import AuditSpill, ReleaseAudit, SecondOpinion, in_batches
from pipeline.surrogates.engine import Deidentifier, SurrogateProposer
from pipeline.surrogates.fields import FieldPolicy
from pipeline.surrogates.leaks import LeakChecker, LeakReport
from pipeline.surrogates.parts import SpillFiles, dialogue_record
from pipeline.surrogates.results import DeidResult, MappingEntry
from pipeline.surrogates.stream import iter_spans
from pipeline.surrogates.sweep import base_of
from pipeline.surrogates.utility import UtilityReport
from pipeline.types import Dialogue, Span

Progress = Callable[[str, int], None]


def report_paths(out: str | Path) -> dict[str, Path]:
    out = Path(out)
    stem = out.name.removesuffix(".jsonl").removesuffix(".csv")
    return {
        "release": out,
        "leaks": out.with_name(f"{stem}.leaks.json"),
        "utility": out.with_name(f"{stem}.utility.json"),
        "summary": out.with_name(f"{stem}.summary.json"),
        "mapping": out.with_name(f"{stem}.mapping.jsonl"),
        "candidates": out.with_name(f"{stem}.candidates.jsonl"),
        "leaks_private": out.with_name(f"{stem}.leaks.private.json"),
    }


PRIVATE_FILES = ("mapping", "candidates", "leaks_private")


def _read(path: Path) -> Iterator[Dialogue]:
    with open(path, encoding="utf-8") as fh:
        yield from iter_jsonl_dialogues(fh)


def _csv_to_jsonl(src: Path, dst: Path) -> None:
    """CSV input (``dialogue_id, seq, speaker, text``) is read whole — its rows may come in any
    order — and streamed from a JSONL copy."""
    with open(dst, "w", encoding="utf-8") as fh:
        for d in read_corpus(src):
            fh.write(json.dumps(dialogue_to_obj(d), ensure_ascii=False) + "\n")


def _jsonl_to_csv(src: Path, dst: Path) -> None:
    with open(src, encoding="utf-8") as fh, open(dst, "w", encoding="utf-8", newline="") as out:
        writer = csvsafe.writer(out)  # text is the students': no formulas
        writer.writerow(["dialogue_id", "seq", "speaker", "text", "ts", "anchor"])
        for d in iter_jsonl_dialogues(fh):
            for m in d.messages:
                writer.writerow(
                    [d.id, m.index, m.speaker, m.text, m.ts or "", d.anchor if m.index == 0 else ""]
                )


NO_GOLD = ("No audit sample to estimate from: no gold was given for a sample of the corpus (--gold), so the "
           "PII the spans miss is unknown; the leak check only finds originals the spans detected.")


class ResidualTally:
    """Released messages, and for the messages of the gold sample, their gold spans and what the
    source's spans miss. The gold file holds whole dialogues, so the dialogue is the sampled
    unit: one stratum of every released message, its misses counted per gold dialogue.

    A reviewed dialogue is released with its gold spans (:meth:`add` returns them): what the audit
    found is fixed, never shipped. Its misses are still counted against the source's spans, since
    those are what every unreviewed dialogue is released with, and what they miss there is what
    is estimated."""

    def __init__(self, gold: str | Path | Iterable[Dialogue]):
        """``gold``: a gold file, or its dialogues (the residual-coverage bench draws them)."""
        self.gold = {d.id: d for d in (read_corpus(gold) if isinstance(gold, str | Path) else gold)}
        self.counts: dict[str, Any] = {"released": 0, "sampled": 0, "gold": 0, "would": 0, "units": 0,
                                       "clustered_sq": 0.0}
        self.matched = 0

    def add(self, dialogue: Dialogue, spans: list[list[Span]]) -> list[list[Span]]:
        """Count ``dialogue`` with the source's ``spans``; return the spans it is released with:
        the gold file's where it was reviewed, ``spans`` elsewhere."""
        c = self.counts
        c["released"] += len(spans)
        reviewed = self.gold.get(dialogue.id)
        if reviewed is None:
            return spans
        if [m.text for m in reviewed.messages] != [m.text for m in dialogue.messages]:
            raise CorpusError([CorpusProblem(0, f"gold dialogue {dialogue.id!r}: its messages differ "
                                                "from the corpus's")])
        self.matched += 1
        would = 0
        for message, ss in zip(reviewed.messages, spans, strict=True):
            gold = list(message.spans)
            would += len(uncovered(gold, ss))
            c["gold"] += len(gold)
        c["sampled"] += len(spans)
        c["would"] += would
        c["units"] += 1
        c["clustered_sq"] += would * would / max(len(spans), 1)
        return [list(m.spans) for m in reviewed.messages]

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        stratum = Stratum("released", released=c["released"], sampled=c["sampled"], gold=c["gold"], missed=0,
                          missed_if_unreviewed=c["would"], units=c["units"] or None, clustered_sq=c["clustered_sq"])
        est = estimate_residual([stratum], dialogues=self.matched)
        return {**est.to_dict(), "gold_dialogues": len(self.gold), "gold_dialogues_matched": self.matched,
                "assumes": "the gold dialogues are a random sample of the corpus's dialogues; misses cluster "
                           "by dialogue no more than the bound assumes, or the sample shows it"}


def release_obj(dialogue: Dialogue, *, with_spans: bool = True) -> dict[str, Any]:
    """The import-format object of a release dialogue (message-level meta is dropped: its offsets,
    if any, point into the original text)."""
    return dialogue_to_obj(dialogue, with_spans=with_spans)


@dataclass
class SpanPass:
    """What the first pass learns: the original PII strings (no surrogate may be one; the leak check
    looks for them) and the counts for the summary; the spans themselves wait in the spill file."""

    originals: set[tuple[str, str]] = field(default_factory=set)
    speaker_originals: set[str] = field(default_factory=set)  # names that speaker labels give
    dialogues: int = 0
    messages: int = 0
    spans: int = 0
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """What the summary says of the first pass."""
        return {"dialogues": self.dialogues, "messages": self.messages, "spans": self.spans,
                "originals": len(self.originals), "speaker_originals": len(self.speaker_originals)}


def collect_spans(
    dialogues: Iterable[Dialogue],
    spans_for: Any,
    spill: IO[str] | SpillFiles,
    *,
    tally: ResidualTally | None = None,
    progress: Progress | None = None,
    fields: FieldPolicy | None = None,
) -> SpanPass:
    """Pass 1: find each dialogue's spans, spill them one line per dialogue (to a file, read back
    by :func:`spilled_spans` beside the dialogues; or, with the dialogues, to the files a release
    in parts reads: :mod:`pipeline.surrogates.parts`), collect the originals: the spans' and
    the names that speaker labels give (``fields``: the release's field policy). With ``tally``,
    a dialogue of its gold sample is counted and released with its gold spans."""
    t0 = time.perf_counter()
    found = SpanPass()
    fields = fields if fields is not None else FieldPolicy()
    for dialogue, found_spans in iter_spans(dialogues, spans_for):
        spans = tally.add(dialogue, found_spans) if tally is not None else found_spans
        names = fields.speaker_names(dialogue).values()
        found.originals.update(("NAME", name) for name in names)
        found.speaker_originals.update(names)
        rows = []
        for msg, ss in zip(dialogue.messages, spans, strict=True):
            rows.append([[s.start, s.end, s.label] for s in ss])
            for s in ss:
                if s.end <= len(msg.text):
                    found.originals.add((s.label, base_of(s.label, msg.text[s.start : s.end])))
            found.spans += len(ss)
        if isinstance(spill, SpillFiles):
            spill.add(dialogue.id, len(dialogue.messages), dialogue_record(dialogue, spans))
        else:
            spill.write(json.dumps(rows) + "\n")
        found.dialogues += 1
        found.messages += len(dialogue.messages)
        if progress and found.dialogues % 100 == 0:
            progress("spans", found.dialogues)
    found.seconds = time.perf_counter() - t0
    return found


def spilled_spans(spill: IO[str]) -> Iterator[list[list[Span]]]:
    """Pass 2's spans, read back from the spill file :func:`collect_spans` wrote (after ``seek(0)``)."""
    for line in spill:
        yield [[Span(a, b, lab) for a, b, lab in row] for row in json.loads(line)]




def id_row(result: DeidResult) -> list[MappingEntry]:
    """The mapping table's row for a dialogue id the release replaced (none when it kept it)."""
    original, released = result.original.id, result.release.id
    return [] if original == released else [MappingEntry(original, "DIALOGUE_ID", original, released, "keyed")]


def write_release(
    records: Iterable[tuple[Dialogue, list[list[Span]]]],
    deid: Deidentifier,
    paths: dict[str, Path],
    *,
    originals: set[tuple[str, str]] | None = None,
    checker: LeakChecker | None = None,
    with_spans: bool = True,
    mapping: bool = True,
    progress: Progress | None = None,
    audit: ReleaseAudit | AuditSpill | None = None,
) -> tuple[LeakChecker, UtilityReport]:
    """Pass 2: de-identify each dialogue with its spans (``records``), write the release (and the mapping table),
    leak-check and count it for the utility report; with ``audit``, audit each released dialogue
    (its candidates go to ``paths["candidates"]`` when there is one), or with a spill, write what
    its audit needs, for the audit to run elsewhere. The leak check looks for ``originals`` (the
    corpus's), or is ``checker``, built for them before. ``paths["scratch"]``, where there is
    one, is where the utility report may spill the text's words (:class:`~pipeline.surrogates.utility.NgramCounts`)."""
    # sorted: the first spelling registered ("Will" or "will") decides how an original is
    # checked, and a set's order changes with the interpreter's hash seed
    checker = checker if checker is not None else LeakChecker(sorted(originals or ()))
    utility = UtilityReport(scratch=paths.get("scratch"))
    paths["release"].parent.mkdir(parents=True, exist_ok=True)
    map_fh = open(paths["mapping"], "w", encoding="utf-8") if mapping else None  # noqa: SIM115
    cand_fh = None
    if isinstance(audit, ReleaseAudit) and "candidates" in paths:
        cand_fh = audit.out = open(paths["candidates"], "w", encoding="utf-8")  # noqa: SIM115

    def released(rel: IO[str]) -> Iterator[DeidResult]:
        for done, (dialogue, ss) in enumerate(records, start=1):
            result = deid.deidentify(dialogue, ss)
            rel.write(json.dumps(release_obj(result.release, with_spans=with_spans), ensure_ascii=False) + "\n")
            checker.check_result(result)
            utility.add(result)
            if map_fh is not None:
                for entry in id_row(result) + result.mapping:
                    map_fh.write(json.dumps(entry.to_dict(), ensure_ascii=False) + "\n")
            if progress and done % 100 == 0:
                progress("release", done)
            yield result

    try:
        with open(paths["release"], "w", encoding="utf-8") as rel:
            for batch in in_batches(released(rel)):  # the second opinion reads a few dialogues at once
                if audit is not None:
                    audit.check_many(batch)
    finally:
        for fh in (map_fh, cand_fh):
            if fh is not None:
                fh.close()
        if isinstance(audit, AuditSpill):
            audit.close()
    return checker, utility


def write_reports(
    paths: dict[str, Path],
    found: SpanPass,
    deid: Deidentifier,
    checker: LeakChecker,
    utility: UtilityReport,
    *,
    source: str,
    release_s: float,
    mapping: bool = True,
    tally: ResidualTally | None = None,
    extra_summary: dict[str, Any] | None = None,
    audit: ReleaseAudit | None = None,
) -> dict[str, Any]:
    """Write the leak, utility and summary reports beside the release; return the summary.

    The leak report on the release's side holds positions only; the strings found go to
    ``paths["leaks_private"]`` when there is one."""
    summary = write_checks(paths, found.counts(), deid.describe(), deid.fallbacks, checker.report, utility,
                           seconds={"spans": found.seconds, "release": release_s}, source=source, mapping=mapping,
                           tally=tally, extra_summary=extra_summary, audited=audit is not None)
    return write_summary(paths, summary, utility.to_dict(), audit=audit)


def write_checks(
    paths: dict[str, Path],
    found: dict[str, int],
    strategy: dict[str, Any],
    fallbacks: dict[str, int],
    leak_report: LeakReport,
    utility: UtilityReport,
    *,
    seconds: dict[str, float],
    source: str,
    mapping: bool,
    tally: ResidualTally | None,
    extra_summary: dict[str, Any] | None,
    audited: bool,
) -> dict[str, Any]:
    """The first half of :func:`write_reports`, all that does not wait for the self-audit: write
    the leak and utility reports; return the summary with its audit's places still empty
    (``publishable`` says the leak check's verdict only), for :func:`write_summary` to fill.
    ``found`` is the first pass's :meth:`SpanPass.counts`, ``strategy`` the engine's description."""
    leaks = leak_report.to_dict(public=True)
    summary = {
        "strategy": strategy,
        "source": source,
        **found,
        "publishable": leaks["publishable"],
        "leaks": leaks["leaks"],
        "candidates": None,
        "capture_recapture": None,
        "fallbacks": dict(fallbacks),
        "residual_risk": tally.to_dict() if tally is not None else {"available": False, "sentence": NO_GOLD},
        "seconds": {name: round(t, 3) for name, t in seconds.items()},
        "files": {k: p.name for k, p in paths.items() if k not in PRIVATE_FILES},
        "private_files": {k: p.name for k, p in paths.items()
                          if k in PRIVATE_FILES and (k != "mapping" or mapping) and (k != "candidates" or audited)},
        **(extra_summary or {}),
    }
    paths["leaks"].write_text(json.dumps(leaks, indent=2, ensure_ascii=False), encoding="utf-8")
    if "leaks_private" in paths:
        paths["leaks_private"].write_text(json.dumps(leak_report.to_dict(), indent=2, ensure_ascii=False),
                                          encoding="utf-8")
    paths["utility"].write_text(json.dumps(utility.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
    return summary


def write_summary(paths: dict[str, Path], summary: dict[str, Any], utility: dict[str, Any], *,
                  audit: ReleaseAudit | None) -> dict[str, Any]:
    """The second half of :func:`write_reports`: the summary of :func:`write_checks` completed with
    the self-audit (``audit``: the release's whole, or merged from chunks) and written; returned
    with the utility report."""
    candidates = audit.to_dict() if audit is not None else {"pending": 0, "by_reason": {}, "dismissed": 0,
                                                            "audited": False}
    summary["publishable"] = summary["publishable"] and not candidates["pending"]
    summary["candidates"] = candidates
    summary["capture_recapture"] = capture_summary(audit)
    paths["summary"].write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    summary["utility"] = utility
    return summary


NO_SECOND_SOURCE = ("No second independent source over the same messages (no second opinion): what every "
                    "source missed cannot be estimated.")


def capture_summary(audit: ReleaseAudit | None) -> dict[str, Any]:
    """Capture–recapture, a secondary check: the release's spans vs the second opinion (with an
    audit). Never gold vs the release's spans: gold is the reference, not a second source that
    misses independently (:mod:`pipeline.metrics.capture`)."""
    out: dict[str, Any] = {}
    if audit is not None and audit.second_opinion.detectors:
        out["release_vs_second_opinion"] = audit.capture.to_dict()
    return out or {"available": False, "sentence": NO_SECOND_SOURCE}


def deidentify_dialogues(
    open_dialogues: Callable[[], Iterable[Dialogue]],
    out: str | Path,
    *,
    key: str | bytes,
    source: str,
    spans_for: Any = None,
    mode: str = "surrogate",
    scope: str = "dialogue",
    propagate: bool = True,
    sweep_corpus: bool = True,
    proposer: SurrogateProposer | None = None,
    with_spans: bool = True,
    mapping: bool = True,
    progress: Progress | None = None,
    extra_summary: dict[str, Any] | None = None,
    gold: str | Path | None = None,
    audit: bool = True,
    second_opinion: list[Any] | None = None,
    dismissed: Collection[str] = (),
    confirmed: Collection[str] = (),
    fields: FieldPolicy | None = None,
) -> dict[str, Any]:
    """Write the JSONL release of the dialogues ``open_dialogues()`` yields (called twice, once per
    pass, so a database query can stream them without a dump) and its reports; return the summary.

    ``audit`` runs the self-audit: ``second_opinion`` is the list of detectors run on the released
    text (default: the rules detector's structured identifiers); ``dismissed`` and ``confirmed``
    are :attr:`Candidate.key` strings people decided ("not PII": not asked again; "PII": a kept
    maths number is replaced after all). ``fields`` is the policy for every field of the record
    around the texts (:class:`~pipeline.surrogates.fields.FieldPolicy`; its defaults when ``None``)."""
    paths = report_paths(out)
    tally = ResidualTally(gold) if gold is not None else None
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spill:
        found = collect_spans(
            open_dialogues(), spans_for, spill, tally=tally, progress=progress, fields=fields
        )
        spill.seek(0)
        t1 = time.perf_counter()
        deid = Deidentifier(
            key=key, mode=mode, scope=scope, propagate=propagate, sweep_corpus=sweep_corpus,
            proposer=proposer, forbidden=found.originals, audit=audit, confirmed=confirmed, fields=fields,
        )
        auditor = (ReleaseAudit(second_opinion=SecondOpinion(second_opinion), dismissed=dismissed, confirmed=confirmed)
                   if audit else None)
        checker, utility = write_release(
            zip(open_dialogues(), spilled_spans(spill), strict=True), deid, paths, originals=found.originals,
            with_spans=with_spans, mapping=mapping, progress=progress, audit=auditor,
        )
    return write_reports(
        paths, found, deid, checker, utility, source=source, release_s=time.perf_counter() - t1,
        mapping=mapping, tally=tally, extra_summary=extra_summary, audit=auditor,
    )


def deidentify_file(
    src: str | Path,
    out: str | Path,
    *,
    key: str | bytes,
    **options: Any,
) -> dict[str, Any]:
    """Write the release of ``src`` to ``out`` and its reports beside it; return the summary.

    The import format in, the same format out: JSONL (streamed), or CSV when ``src`` ends in
    ``.csv`` (then ``out`` is CSV too if it ends in ``.csv``; spans are JSONL-only). ``options``
    are :func:`deidentify_dialogues`'s.
    """
    src, out = Path(src), Path(out)
    if src.suffix.lower() == ".csv" or out.suffix.lower() == ".csv":
        return _deidentify_via_jsonl(src, out, key=key, **options)
    return deidentify_dialogues(lambda: _read(src), out, key=key, source=src.name, **options)


def _deidentify_via_jsonl(src: Path, out: Path, *, key: str | bytes, **options: Any) -> dict[str, Any]:
    """CSV in or out: de-identify a JSONL copy, then write the release as CSV if ``out`` asks."""
    with tempfile.TemporaryDirectory() as tmp:
        src_jsonl = Path(tmp) / "source.jsonl"
        if src.suffix.lower() == ".csv":
            _csv_to_jsonl(src, src_jsonl)
        else:
            shutil.copyfile(src, src_jsonl)
        jsonl_out = out.with_suffix(".jsonl")
        summary = deidentify_file(src_jsonl, jsonl_out, key=key, **options)
        if out.suffix.lower() == ".csv":
            _jsonl_to_csv(jsonl_out, out)
            jsonl_out.unlink()
            summary["files"]["release"] = out.name
        return summary
