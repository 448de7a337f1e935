"""Label Studio task JSON: one task per message, spans as ``labels`` results.

A task is ``{"data": {"text", ...}, "annotations": [{"result": [...]}], "predictions": [...]}``;
a span is the result ``{"from_name", "to_name", "type": "labels", "value": {"start", "end",
"text", "labels": [L]}}``. Offsets are code points of ``data.text``, as Label Studio stores them
since its frontend fix for emoji (label-studio#1559); the reader also checks ``value.text`` against
the text at those offsets, which catches an older export counted in UTF-16 units.

Every task the writer makes has an ``id`` (1, 2, … through the file), and so has its annotation or
prediction (the task's number): Label Studio's converter (``label_studio_sdk.converter``: JSON_MIN,
CoNLL, CSV) reads ``task["id"]`` and stops with ``KeyError: 'id'`` on a task without one.
The writer puts ``dialogue_id``, ``index``, ``speaker`` (and ``ts``, and the dialogue's ``anchor``
on its first message) into ``data`` beside ``text``, so reading its file back restores the
dialogues. A task from elsewhere, without them, becomes a one-message dialogue named after the
task's ``id``, or, when it has none, after the file's name and a hash of the task (``tasks-3f2a9c01b4de``:
:class:`~pipeline.formats._common.DerivedIds`), so two such files do not both make ``task-1``.

Which spans a task contributes (``spans_from``): ``auto`` takes its first annotation that was not
cancelled, else its first prediction; ``annotations`` or ``predictions`` take only that kind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any
from xml.sax.saxutils import quoteattr

from pipeline.corpus import MAX_NESTING, CorpusError, CorpusProblem, ParseReport, too_deep
from pipeline.formats._common import (
    DEFAULT_SPEAKER,
    DerivedIds,
    Record,
    assemble,
    decode,
    foreign_record,
    json_head,
    message_index,
    note_derived,
    own_id,
)
from pipeline.types import Dialogue, Span

SPANS_FROM = ("auto", "annotations", "predictions")
FROM_NAME, TO_NAME = "label", "text"
EXAMPLE = (b'[{"data": {"text": "Hi Ana!"}, "annotations": [{"result": [{"from_name": "label", "to_name": "text", '
           b'"type": "labels", "value": {"start": 3, "end": 6, "text": "Ana", "labels": ["NAME"]}}]}]}]\n')


def sniffs(lower: str, body: bytes) -> bool:
    """A JSON array, or JSON objects whose first is a task (``"data"`` holding ``"text"``)."""
    first = json_head(lower, body)
    return body.startswith(b"[") or (first is not None and foreign_record(first) and b'"data"' in first)


def read(raw: bytes, *, name: str = "", max_bytes: int | None = None, **kwargs: Any) -> list[Dialogue]:
    return parse_labelstudio(decode(raw), name=name, **kwargs)


# ------------------------------------------------------------------------------------- writer


def span_result(text: str, span: Span, *, k: int, with_score: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f"s{k}", "from_name": FROM_NAME, "to_name": TO_NAME, "type": "labels",
        "value": {"start": span.start, "end": span.end, "text": text[span.start:span.end], "labels": [span.label]},
    }
    if with_score:
        out["score"] = round(float(span.score), 6)
    return out


def to_tasks(dialogues: Iterable[Dialogue], *, spans_as: str = "annotations",
             model_version: str = "", first_id: int = 1) -> Iterable[dict[str, Any]]:
    """One task per message, numbered from ``first_id`` (its annotation or prediction takes the
    same number); ``spans_as`` is ``annotations`` (gold) or ``predictions`` (a run)."""
    if spans_as not in ("annotations", "predictions"):
        raise ValueError("spans_as must be 'annotations' or 'predictions'")
    task_id = first_id
    for d in dialogues:
        for pos, m in enumerate(d.messages):
            data: dict[str, Any] = {"text": m.text, "dialogue_id": d.id, "index": m.index, "speaker": m.speaker}
            if m.ts is not None:
                data["ts"] = m.ts
            if pos == 0 and d.anchor:
                data["anchor"] = d.anchor
            result = [span_result(m.text, s, k=k, with_score=spans_as == "predictions")
                      for k, s in enumerate(sorted(m.spans))]
            task: dict[str, Any] = {"id": task_id, "data": data}
            if spans_as == "annotations":
                task["annotations"] = [{"id": task_id, "result": result, "was_cancelled": False}]
            else:
                task["predictions"] = [{"id": task_id, "model_version": model_version, "result": result}]
            task_id += 1
            yield task


def write_labelstudio(dialogues: Iterable[Dialogue], fh: IO[str], **kwargs: Any) -> int:
    """Stream a JSON array of tasks (see :func:`to_tasks`); returns the number written."""
    n = 0
    fh.write("[")
    for task in to_tasks(dialogues, **kwargs):
        fh.write(("," if n else "") + "\n" + json.dumps(task, ensure_ascii=False))
        n += 1
    fh.write("\n]\n")
    return n


def labeling_config(labels: Iterable[str]) -> str:
    """The Label Studio labeling config that matches the tasks written here."""
    items = "\n".join(f"    <Label value={quoteattr(lab)}/>" for lab in labels)
    return (f'<View>\n  <Labels name="{FROM_NAME}" toName="{TO_NAME}">\n{items}\n  </Labels>\n'
            f'  <Text name="{TO_NAME}" value="$text"/>\n</View>\n')


class LabelStudioBundleWriter:
    """Gold bundle writer (its entry in :data:`pipeline.formats.CATALOG`): ``labelstudio/tasks.json``
    (gold spans as annotations, the split in ``data.split``) and the matching
    ``labelstudio/config.xml``."""

    def __init__(self, spec: Any) -> None:
        self.dir = spec.root / "labelstudio"
        self.dir.mkdir(exist_ok=True)
        self.labels = spec.labels
        self.fh = open(self.dir / "tasks.json", "w", encoding="utf-8")  # noqa: SIM115
        self.fh.write("[")
        self.n = 0

    def write(self, dialogue: Dialogue, split: str) -> None:
        for task in to_tasks([dialogue], first_id=self.n + 1):
            task["data"]["split"] = split
            self.fh.write(("," if self.n else "") + "\n" + json.dumps(task, ensure_ascii=False))
            self.n += 1

    def close(self) -> list[str]:
        self.fh.write("\n]\n")
        self.fh.close()
        (self.dir / "config.xml").write_text(labeling_config(self.labels), encoding="utf-8")
        return ["labelstudio/tasks.json", "labelstudio/config.xml"]


# ------------------------------------------------------------------------------------- reader


def _iter_array(text: str) -> Iterable[tuple[int, Any]]:
    """``(line, value)`` for each element of a top-level JSON array (or the one object given)."""
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    if text.startswith("{", pos):
        value, _ = decoder.raw_decode(text, pos)
        yield text.count("\n", 0, pos) + 1, value
        return
    if not text.startswith("[", pos):
        raise json.JSONDecodeError("a Label Studio file is a JSON array of tasks", text, pos)
    pos = _skip(text, pos + 1)
    if text.startswith("]", pos):
        return
    while True:
        line = text.count("\n", 0, pos) + 1
        value, pos = decoder.raw_decode(text, pos)
        yield line, value
        pos = _skip(text, pos)
        if text.startswith("]", pos):
            return
        if not text.startswith(",", pos):
            raise json.JSONDecodeError("expected ',' or ']' between tasks", text, pos)
        pos = _skip(text, pos + 1)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _chosen_results(task: dict, spans_from: str) -> tuple[list, float | None, str]:
    """The result list a task contributes, the prediction-level score, and what it came from."""
    annotations = [a for a in task.get("annotations") or [] if isinstance(a, dict) and not a.get("was_cancelled")]
    predictions = [p for p in task.get("predictions") or [] if isinstance(p, dict)]
    if spans_from in ("auto", "annotations") and annotations:
        return annotations[0].get("result") or [], None, "annotation"
    if spans_from in ("auto", "predictions") and predictions:
        score = predictions[0].get("score")
        return predictions[0].get("result") or [], score if isinstance(score, int | float) else None, "prediction"
    return [], None, ""


def _spans(results: Any, text: str, default_score: float | None, where: str, problems: list, line: int) -> list:
    if not isinstance(results, list):
        problems.append(CorpusProblem(line, f"{where}: 'result' must be a list"))
        return []
    spans = []
    for k, r in enumerate(results):
        if not isinstance(r, dict) or r.get("type", "labels") != "labels":
            continue  # choices, relations, ratings: not spans
        value = r.get("value")
        at = f"{where} result {k}"
        if not isinstance(value, dict):
            problems.append(CorpusProblem(line, f"{at}: 'value' must be an object"))
            continue
        start, end, labels = value.get("start"), value.get("end"), value.get("labels")
        if not (isinstance(labels, list) and labels and all(isinstance(x, str) for x in labels)):
            problems.append(CorpusProblem(line, f"{at}: 'value.labels' must be a non-empty list of label names"))
            continue
        if (isinstance(start, int) and isinstance(end, int) and isinstance(value.get("text"), str)
                and 0 <= start < end <= len(text) and text[start:end] != value["text"]):
            problems.append(CorpusProblem(line, (
                f"{at}: 'value.text' {value['text']!r} is not the text at {start}..{end} ({text[start:end]!r}); "
                "offsets must count code points (an old Label Studio export may count UTF-16 units)")))
            continue
        score = r.get("score", default_score)
        for label in labels:
            span = {"start": start, "end": end, "label": label}
            if score is not None:
                span["score"] = score
            spans.append(span)
    return spans


def parse_labelstudio(
    text: str, *, labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, spans_from: str = "auto", name: str = "", default_speaker: str | None = None,
) -> list[Dialogue]:
    """Tasks → Dialogues, all or nothing; problems name the task and its line. A task without
    ``data.dialogue_id`` or ``id`` is named from ``name`` (the file's) and its content
    (:class:`~pipeline.formats._common.DerivedIds`)."""
    if spans_from not in SPANS_FROM:
        raise ValueError(f"spans_from must be one of {SPANS_FROM}")
    problems: list[CorpusProblem] = []
    records: list[Record] = []
    derive = DerivedIds(name, "task")
    try:
        tasks = list(_iter_array(text))
    except json.JSONDecodeError as exc:
        raise CorpusError([CorpusProblem(exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})")]) from None
    except RecursionError:  # where the value ends is unknown, so the whole file stops here
        raise CorpusError([CorpusProblem(1, f"nested deeper than {MAX_NESTING} levels")]) from None
    for n, (line, task) in enumerate(tasks, start=1):
        where = f"task {n}"
        if too_deep(task):
            problems.append(CorpusProblem(line, f"{where}: nested deeper than {MAX_NESTING} levels"))
            continue
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            problems.append(CorpusProblem(line, f"{where}: each task must be an object with a 'data' object"))
            continue
        body = data.get("text")
        if not isinstance(body, str):
            problems.append(CorpusProblem(line, f"{where}: 'data.text' must be a string"))
            continue
        results, score, _ = _chosen_results(task, spans_from)
        spans = _spans(results, body, score, where, problems, line)
        records.append(Record(
            line=line, where=where, text=body,
            dialogue_id=own_id(data.get("dialogue_id"), task.get("id")) or derive(task),
            index=message_index(data.get("index")), speaker=data.get("speaker") or default_speaker or DEFAULT_SPEAKER,
            ts=data.get("ts"), anchor=data.get("anchor"), spans=spans,
        ))
    dialogues = assemble(records, problems, labels=labels, max_id_length=max_id_length, report=report)
    note_derived(report, derive, dialogues)
    return dialogues
