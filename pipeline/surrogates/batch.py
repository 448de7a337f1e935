"""De-identify a corpus file into a release file, streaming, with its reports beside it.

Two passes over the input, so memory stays flat whatever the corpus size:

1. spans for every dialogue (its own spans, or a detector's) are spilled to a temporary file and
   the set of original PII strings is collected (it is what no surrogate may be, and what the
   leak check looks for);
2. each dialogue is de-identified, written, leak-checked and counted for the utility report.

Files written next to ``out`` (``RELEASE.jsonl``): ``RELEASE.leaks.json``,
``RELEASE.utility.json``, ``RELEASE.summary.json`` and — unless ``mapping=False`` —
``RELEASE.mapping.jsonl``, the original → surrogate table, which must be kept apart from the
release (anyone holding it can undo the de-identification).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pipeline.corpus import dialogue_to_obj, iter_jsonl_dialogues
from pipeline.surrogates.engine import Deidentifier, SurrogateProposer, iter_spans
from pipeline.surrogates.leaks import LeakChecker
from pipeline.surrogates.utility import UtilityReport
from pipeline.types import Dialogue, Span

Progress = Callable[[str, int], None]


def report_paths(out: str | Path) -> dict[str, Path]:
    out = Path(out)
    stem = out.name.removesuffix(".jsonl")
    return {
        "release": out,
        "leaks": out.with_name(f"{stem}.leaks.json"),
        "utility": out.with_name(f"{stem}.utility.json"),
        "summary": out.with_name(f"{stem}.summary.json"),
        "mapping": out.with_name(f"{stem}.mapping.jsonl"),
    }


def _read(path: Path) -> Iterator[Dialogue]:
    with open(path, encoding="utf-8") as fh:
        yield from iter_jsonl_dialogues(fh)


def release_obj(dialogue: Dialogue, *, with_spans: bool = True) -> dict[str, Any]:
    """The import-format object of a release dialogue (message-level meta is dropped: its offsets,
    if any, point into the original text)."""
    return dialogue_to_obj(dialogue, with_spans=with_spans)


def deidentify_file(
    src: str | Path,
    out: str | Path,
    *,
    key: str | bytes,
    spans_for: Any = None,
    mode: str = "surrogate",
    scope: str = "dialogue",
    propagate: bool = True,
    sweep_corpus: bool = True,
    proposer: SurrogateProposer | None = None,
    with_spans: bool = True,
    mapping: bool = True,
    batch_size: int = 32,
    progress: Progress | None = None,
    extra_summary: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the release of ``src`` to ``out`` and its reports beside it; return the summary."""
    src, paths = Path(src), report_paths(out)
    t0 = time.perf_counter()
    originals: set[tuple[str, str]] = set()
    n_dialogues = n_messages = n_spans = 0
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spill:
        for dialogue, spans in iter_spans(_read(src), spans_for, batch_size=batch_size):
            rows = []
            for msg, ss in zip(dialogue.messages, spans, strict=True):
                rows.append([[s.start, s.end, s.label] for s in ss])
                for s in ss:
                    if s.end <= len(msg.text):
                        originals.add(
                            (s.label, Deidentifier._base(s.label, msg.text[s.start : s.end]))
                        )
                n_spans += len(ss)
            spill.write(json.dumps(rows) + "\n")
            n_dialogues += 1
            n_messages += len(dialogue.messages)
            if progress and n_dialogues % 100 == 0:
                progress("spans", n_dialogues)
        detect_s = time.perf_counter() - t0

        spill.seek(0)
        t1 = time.perf_counter()
        deid = Deidentifier(
            key=key,
            mode=mode,
            scope=scope,
            propagate=propagate,
            sweep_corpus=sweep_corpus,
            proposer=proposer,
            forbidden=originals,
        )
        checker = LeakChecker(originals)
        utility = UtilityReport()
        paths["release"].parent.mkdir(parents=True, exist_ok=True)
        map_fh = open(paths["mapping"], "w", encoding="utf-8") if mapping else None  # noqa: SIM115
        try:
            with open(paths["release"], "w", encoding="utf-8") as rel:
                for done, dialogue in enumerate(_read(src), start=1):
                    rows = json.loads(spill.readline())
                    spans = [[Span(a, b, lab) for a, b, lab in row] for row in rows]
                    result = deid.deidentify(dialogue, spans)
                    rel.write(
                        json.dumps(
                            release_obj(result.release, with_spans=with_spans), ensure_ascii=False
                        )
                        + "\n"
                    )
                    checker.check_result(result)
                    utility.add(result)
                    if map_fh is not None:
                        for entry in result.mapping:
                            map_fh.write(json.dumps(entry.to_dict(), ensure_ascii=False) + "\n")
                    if progress and done % 100 == 0:
                        progress("release", done)
        finally:
            if map_fh is not None:
                map_fh.close()
    release_s = time.perf_counter() - t1
    leaks = checker.report.to_dict()
    summary = {
        "strategy": deid.describe(),
        "source": src.name,
        "dialogues": n_dialogues,
        "messages": n_messages,
        "spans": n_spans,
        "originals": len(originals),
        "publishable": leaks["publishable"],
        "leaks": leaks["leaks"],
        "fallbacks": dict(deid.fallbacks),
        "seconds": {"spans": round(detect_s, 3), "release": round(release_s, 3)},
        "files": {k: p.name for k, p in paths.items() if k != "mapping" or mapping},
        **(extra_summary or {}),
    }
    paths["leaks"].write_text(json.dumps(leaks, indent=2, ensure_ascii=False), encoding="utf-8")
    paths["utility"].write_text(
        json.dumps(utility.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8"
    )
    paths["summary"].write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    summary["utility"] = utility.to_dict()
    return summary
