"""Does a release ship the names its record carries? Speaker names in every released field, the
originals that came from speaker labels, and the review candidates per 1,000 messages.

    python bench/record_bench.py CORPUS.jsonl [--detector tagger --config '{"policy": "strict"}'] [--out DIR]
    python bench/record_bench.py CORPUS.jsonl --release RELEASE.jsonl   # audit a release made before

The first form releases CORPUS with ``deidentify`` (the spans in the file, or ``--detector``'s) and
audits it; the second audits a release already written (by another version of Blindspot, say),
reading its ``RELEASE.summary.json`` for the candidates. The audit looks, in every string of each
released dialogue (id, speaker labels, texts, timestamps, anchor, metadata values), for the names
that the original dialogue's speaker labels give and their words of three letters or more
(case, accents and apostrophes folded, word-bounded), and counts the dialogues and places where one
shipped, by field. About a second per thousand messages on the rules detector.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.formats import read_corpus  # noqa: E402
from pipeline.speakers import named_speakers  # noqa: E402
from pipeline.surrogates.fields import meta_items  # noqa: E402
from pipeline.text import fold  # noqa: E402


def _strings(obj: dict) -> list[tuple[str, str]]:
    out = [("id", obj["id"]), ("anchor", obj.get("anchor", ""))]
    for m in obj["messages"]:
        out += [("speaker", m.get("speaker", "")), ("text", m.get("text", "")), ("ts", m.get("ts") or "")]
    out += [("meta", v) for _, v in meta_items(obj.get("meta", {})) if isinstance(v, str)]
    return out


def audit(corpus: Path, release: Path) -> dict:
    """Speaker names of each original dialogue found in its released record, by field."""
    originals = read_corpus(corpus)
    shipped: Counter[str] = Counter()
    dialogues_with_names = dialogues_leaking = 0
    with release.open(encoding="utf-8") as fh:
        for dialogue, line in zip(originals, fh, strict=True):
            names = named_speakers(m.speaker for m in dialogue.messages if m.speaker).values()
            words = {fold(w) for n in names for w in re.findall(r"[^\W\d_]{3,}", n)} - {"mrs", "miss"}
            if not words:
                continue
            dialogues_with_names += 1
            pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, sorted(words))) + r")(?!\w)")
            hits = Counter(field for field, text in _strings(json.loads(line)) for _ in pattern.finditer(fold(text)))
            shipped.update(hits)
            dialogues_leaking += bool(hits)
    return {"dialogues": len(originals), "messages": sum(len(d.messages) for d in originals),
            "dialogues_with_named_speakers": dialogues_with_names,
            "dialogues_shipping_a_speaker_name": dialogues_leaking,
            "speaker_name_places_shipped": dict(sorted(shipped.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--release", type=Path, help="audit this release instead of making one")
    parser.add_argument("--detector", default="", help="a detector's spans instead of the file's")
    parser.add_argument("--config", default="{}", help="the detector's config as JSON")
    parser.add_argument("--out", type=Path, help="where to write the release (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        release = args.release or (args.out or Path(tmp)) / "release.jsonl"
        if args.release is None:
            _release(args.corpus, release, args.detector, args.config)
        summary = json.loads(release.with_name(release.stem + ".summary.json").read_text(encoding="utf-8"))
        utility = json.loads(release.with_name(release.stem + ".utility.json").read_text(encoding="utf-8"))
        figures = audit(args.corpus, release)
    pending = summary["candidates"]["pending"]
    figures.update({
        "speaker_originals": summary.get("speaker_originals", 0), "leaks": summary["leaks"],
        "candidates_pending": pending, "candidates_by_reason": summary["candidates"]["by_reason"],
        "candidates_per_1000_messages": round(1000 * pending / max(figures["messages"], 1), 2),
        "messages_numbers_changed": utility["messages_numbers_changed"],
        "strategy": summary["strategy"]["strategy"],
    })
    print(json.dumps(figures, indent=2, ensure_ascii=False))


def _release(corpus: Path, release: Path, detector: str, config: str) -> None:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    os.environ.setdefault("DEBUG", "1")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("deidentify", str(corpus), "--out", str(release), "--key", "record-bench-key",
                 *(["--detector", detector, "--config", config] if detector else []))


if __name__ == "__main__":
    main()
