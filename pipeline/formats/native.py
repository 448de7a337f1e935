"""The import format: JSONL (one dialogue object per line) and CSV (one message per row).

Both readers build their dialogues with :func:`pipeline.corpus.dialogue_from_obj`, collecting every
problem with its line. :func:`stream_jsonl` reads a JSONL upload in batches, all or nothing still,
so that an import's memory does not grow with the file; :func:`iter_jsonl_dialogues` streams one
and stops at its first problem (batch de-identification, ``manage.py detect``).
``read_jsonl``/``read_csv``, ``stream_jsonl`` and ``sniffs_*`` are their entries in
:data:`pipeline.formats.CATALOG`.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

from pipeline.corpus import (
    CorpusError,
    CorpusProblem,
    ParseReport,
    Repeat,
    dialogue_from_obj,
    fingerprints,
    json_lines,
)
from pipeline.formats._common import all_or_nothing, decode, json_head, utf8_lines
from pipeline.types import Dialogue

JSONL_EXAMPLE = (b'{"id": "d1", "messages": [{"speaker": "tutor", "text": "Hi Ana!", '
                 b'"spans": [{"start": 3, "end": 6, "label": "NAME"}]}]}\n')
CSV_EXAMPLE = b"dialogue_id,seq,speaker,text\nd1,0,tutor,Hi Ana!\nd1,1,student,hello\n"


def sniffs_jsonl(lower: str, body: bytes) -> bool:
    """A JSON file that is not another tool's (asked after them): the import format's JSONL."""
    return json_head(lower, body) is not None


def sniffs_csv(lower: str, body: bytes) -> bool:
    return lower.endswith((".csv", ".tsv"))


def read_jsonl(raw: bytes, *, name: str = "", max_bytes: int | None = None, **kwargs: Any) -> list[Dialogue]:
    return parse_jsonl(decode(raw), **kwargs)


def read_csv(raw: bytes, *, name: str = "", max_bytes: int | None = None, **kwargs: Any) -> list[Dialogue]:
    return parse_csv(decode(raw), **kwargs)


def parse_jsonl(
    text: str, *, labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, default_speaker: str | None = None,
) -> list[Dialogue]:
    return [d for batch in jsonl_batches(io.StringIO(text), batch=sys.maxsize, labels=labels,
                                         max_id_length=max_id_length, report=report, default_speaker=default_speaker)
            for d in batch]


def stream_jsonl(fh: IO[bytes], **kwargs: Any) -> Iterator[list[Dialogue]]:
    """:func:`jsonl_batches` of an open binary file, decoded a line at a time (the
    :data:`pipeline.formats.CATALOG` entry's ``stream``)."""
    return jsonl_batches(utf8_lines(fh), **kwargs)


def jsonl_batches(
    lines: Iterable[str], *, batch: int, labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, default_speaker: str | None = None,
) -> Iterator[list[Dialogue]]:
    """Checked dialogues in lists of at most ``batch``, read as they are asked for, so that an
    import holds one batch and the ids seen (with digests of their content), never the corpus.
    All or nothing like every reader: after the first problem no further batch comes and the rest
    is read only for its problems; at the end :class:`CorpusError` names every one (the caller
    writes the batches in one transaction, which the error undoes).

    A dialogue the file repeats identically (:func:`pipeline.corpus.fingerprints`: the same
    anchor and messages once canonical; its own ``meta`` may differ, the first line's is kept)
    comes once and is listed in ``report.repeats``; a repeated id with other content is a
    problem naming both lines."""
    problems: list[CorpusProblem] = []
    dialogues: list[Dialogue] = []
    seen: dict[str, tuple[int, bytes, bytes]] = {}
    for lineno, obj in json_lines(lines, problems):
        found = ParseReport()
        dialogue = dialogue_from_obj(obj, lineno, labels, problems, max_id_length=max_id_length, report=found,
                                     default_speaker=default_speaker)
        if dialogue is None:
            continue
        content, meta = fingerprints(dialogue)
        if dialogue.id in seen:
            first, first_content, first_meta = seen[dialogue.id]
            if content != first_content:
                problems.append(CorpusProblem(
                    lineno, f"duplicate dialogue id {dialogue.id!r} (first on line {first}) with other messages or "
                            "anchor; a dialogue may be repeated only identically"))
            elif report is not None:
                report.repeats.append(Repeat(dialogue.id, lineno, first, other_meta=meta != first_meta))
            continue
        seen[dialogue.id] = (lineno, content, meta)
        if report is not None:
            report.normalised.update(found.normalised)
        if not problems:
            dialogues.append(dialogue)
        if len(dialogues) >= batch:
            yield dialogues
            dialogues = []
    if problems:
        raise CorpusError(problems)
    if not seen:
        raise CorpusError([CorpusProblem(1, "the file contains no dialogues")])
    if dialogues:
        yield dialogues


CSV_REQUIRED = ("dialogue_id", "seq", "speaker", "text")


def parse_csv(
    text: str, *, labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, default_speaker: str | None = None,
) -> list[Dialogue]:
    """CSV rows ``dialogue_id, seq, speaker, text [, ts, anchor]``; rows of a dialogue may be in any order."""
    problems: list[CorpusProblem] = []
    grouped, first_line = _group_csv_rows(_csv_reader(text), problems)
    dialogues = []
    for did, rows in grouped.items():
        dialogue = _csv_dialogue(did, rows, first_line[did], labels, problems,
                                 max_id_length=max_id_length, report=report, default_speaker=default_speaker)
        if dialogue is not None:
            dialogues.append(dialogue)
    return all_or_nothing(dialogues, problems, empty="the file contains no rows")


def _csv_reader(text: str) -> csv.DictReader:
    """A reader over the rows with the header stripped; a header without the required columns
    stops the whole file."""
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise CorpusError([CorpusProblem(1, f"malformed CSV header: {exc}")]) from None
    missing = [c for c in CSV_REQUIRED if c not in header]
    if missing:
        raise CorpusError(
            [CorpusProblem(1, f"CSV header lacks column(s) {', '.join(missing)}; need {', '.join(CSV_REQUIRED)}")]
        )
    reader.fieldnames = header
    return reader


def _group_csv_rows(
    reader: csv.DictReader, problems: list
) -> tuple[dict[str, list[tuple[int, int, dict]]], dict[str, int]]:
    """Rows grouped by dialogue as ``(seq, line, row)``, and each dialogue's first line."""
    grouped: dict[str, list[tuple[int, int, dict]]] = {}
    first_line: dict[str, int] = {}
    try:
        for row in reader:
            lineno = reader.line_num
            if None in row:
                problems.append(CorpusProblem(lineno, "more fields than the header has columns"))
                continue
            did = (row.get("dialogue_id") or "").strip()
            if not did:
                problems.append(CorpusProblem(lineno, "empty 'dialogue_id'"))
                continue
            try:
                seq = int((row.get("seq") or "").strip())
            except ValueError:
                problems.append(CorpusProblem(lineno, f"'seq' must be an integer, got {row.get('seq')!r}"))
                continue
            grouped.setdefault(did, []).append((seq, lineno, row))
            first_line.setdefault(did, lineno)
    except csv.Error as exc:
        problems.append(CorpusProblem(reader.line_num, f"malformed CSV: {exc}"))
    return grouped, first_line


def _csv_dialogue(
    did: str, rows: list[tuple[int, int, dict]], first: int, labels: set[str] | None, problems: list, *,
    max_id_length: int | None, report: ParseReport | None, default_speaker: str | None = None,
) -> Dialogue | None:
    """One dialogue's rows, in ``seq`` order, read as a dialogue object; message problems point at
    the CSV row they came from."""
    rows.sort(key=lambda r: r[0])
    seqs = [r[0] for r in rows]
    if len(set(seqs)) != len(seqs):
        dup = next(s for s in seqs if seqs.count(s) > 1)
        line = next(r[1] for r in rows if r[0] == dup)
        problems.append(CorpusProblem(line, f"dialogue {did!r} has 'seq' {dup} twice"))
        return None
    anchor = next((r[2].get("anchor") or "" for r in rows if (r[2].get("anchor") or "").strip()), "")
    obj = {
        "id": did,
        "anchor": anchor,
        "messages": [
            {"speaker": r[2].get("speaker"), "text": r[2].get("text"), "ts": (r[2].get("ts") or None)}
            for r in rows
        ],
    }
    before = len(problems)
    dialogue = dialogue_from_obj(obj, first, labels, problems, max_id_length=max_id_length, report=report,
                                 default_speaker=default_speaker)
    if dialogue is None and len(problems) > before:
        for j in range(before, len(problems)):
            msg = problems[j].message
            if msg.startswith("message "):
                k = int(msg.split()[1].rstrip(":"))
                problems[j] = CorpusProblem(rows[k][1], msg)
    return dialogue


def iter_jsonl_dialogues(fh: IO[str]) -> Iterator[Dialogue]:
    """Stream dialogues from a JSONL file without holding the corpus (for batch de-identification)."""
    for lineno, line in enumerate(fh, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError([CorpusProblem(lineno, f"malformed JSON: {exc.msg}")]) from None
        problems: list[CorpusProblem] = []
        dialogue = dialogue_from_obj(obj, lineno, None, problems)
        if problems or dialogue is None:
            raise CorpusError(problems)
        yield dialogue
