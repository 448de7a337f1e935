"""Classroom talk: name recall, numbers removed and junk flags per detector, and what 300
gold-labelled dialogues add to a tagger trained on generated data (issue 16's "done when").

    nice -n 10 .venv/bin/python bench/classroom_bench.py [--data ../shared/data]
        [--gold 300] [--synthetic 100] [--ratios 1,3] [--train-seconds 900] [--skip-presidio]

The dev set is the real tutoring and classroom text of ``../shared/data`` with generated names
where it had placeholders (:mod:`pipeline.devset`). Its dialogues are split by dialogue, seeded:
``--gold`` of them play the user's gold-labelled dialogues, the rest are the held-out set every
figure below is measured on. Tagger versions, trained here once and reused (``var/bench-models``):

- ``gen-tutoring``: generated tutoring dialogues only (the generator before classroom lessons);
- ``gen-classroom``: generated dialogues with the classroom share (the generator now) — (a);
- ``gen-classroom+goldxR``: the same plus the gold dialogues, repeated ``R`` times — (b).

Per detector: name recall (a gold name overlapped by any span), the share of number tokens
removed (all teaching content here), junk flags per 1,000 messages (spans on fillers,
endearments, maths words, references, road names, the modal "May", de-identified initials and
placeholders: :func:`pipeline.filters.junk.junk_kind` and ``placeholder.span``, the lists the
filters use) and other flags per 1,000 messages (spans on no gold name: the held-out text has no
other PII to find, so nearly all of them are false). Taggers are also scored without their
post-filter ("raw"), which shows what the model itself learnt.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.tagger_bench import dev_scores, run  # noqa: E402
from pipeline.filters.junk import junk_kind  # noqa: E402
from pipeline.filters.placeholder import is_placeholder_span  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.types import Dialogue, Span  # noqa: E402

TRAIN_SEED = 2026  # generated training data; never the demo corpus's seed 7
SPLIT_SEED = 16


def junk_flags(dialogues: Sequence[Dialogue], predicted: Sequence[Sequence[Sequence[Span]]]) -> dict:
    """Spans on junk (by kind) and spans on no gold name, each per 1,000 messages."""
    kinds: Counter[str] = Counter()
    other = messages = 0
    for d, preds in zip(dialogues, predicted, strict=True):
        for m, pred in zip(d.messages, preds, strict=True):
            messages += 1
            for p in pred:
                kind = junk_kind(m.text, p.start, p.end, p.label)
                if kind is None and is_placeholder_span(m.text, p.start, p.end):
                    kind = "placeholder"
                if kind is not None:
                    kinds[kind] += 1
                elif not any(g.start < p.end and p.start < g.end for g in m.spans):
                    other += 1
    per_1k = 1000 / max(1, messages)
    return {
        "junk_per_1k": sum(kinds.values()) * per_1k,
        "junk_kinds": dict(kinds.most_common()),
        "other_per_1k": other * per_1k,
    }


def split_gold(dev: Sequence[Dialogue], n_gold: int) -> tuple[list[Dialogue], list[Dialogue]]:
    """``n_gold`` dialogues (seeded, by dialogue) as the user's gold; the rest held out."""
    order = sorted(range(len(dev)), key=lambda i: dev[i].id)
    random.Random(SPLIT_SEED).shuffle(order)
    gold = set(order[:n_gold])
    return [d for i, d in enumerate(dev) if i in gold], [d for i, d in enumerate(dev) if i not in gold]


def training_sets(args, gold: Sequence[Dialogue]) -> dict[str, list[Dialogue]]:
    from pipeline.synthetic import generate_corpus

    tutoring = generate_corpus(args.synthetic, TRAIN_SEED, classroom=0.0)
    generated = generate_corpus(args.synthetic, TRAIN_SEED)
    sets = {"gen-tutoring": tutoring, "gen-classroom": generated}
    for r in args.ratios:
        copies = [
            dataclasses.replace(d, id=f"gold{k}:{d.id}") for k in range(r) for d in gold
        ]
        sets[f"gen-classroom+goldx{r}"] = generated + copies
    return sets


def ensure_model(name: str, dialogues: list[Dialogue], args) -> str:
    """A usable version of ``name`` under the bench's model root, trained once."""
    from pipeline.tagger import train_tagger
    from pipeline.tagger.store import activation_blockers, list_models

    usable = [i for i in list_models(args.model_dir, name) if not activation_blockers(i)]
    if usable:
        return max(usable, key=lambda i: i.version).path
    n = sum(len(d.messages) for d in dialogues)
    print(f"training {name} on {len(dialogues)} dialogues ({n} messages) …", flush=True)
    info = train_tagger(
        dialogues, name=name, out_dir=args.model_dir, max_seconds=args.train_seconds,
        check_precision=False,
    )
    problems = activation_blockers(info)
    print(f"  {info.full_version}: {info.training_seconds:.0f}s, steps {info.hyper.get('steps')}"
          f"{' — NOT USABLE: ' + '; '.join(problems) if problems else ''}", flush=True)
    return info.path


def score(label: str, detector, held_out: Sequence[Dialogue], rows: dict) -> None:
    t0 = time.perf_counter()
    pred, _, _ = run(detector, held_out)
    rows[label] = {**dev_scores(held_out, pred), **junk_flags(held_out, pred),
                   "seconds": round(time.perf_counter() - t0, 1), "version": detector.model_version}
    r = rows[label]
    print(f"  {label}: name recall {r['name_recall']:.3f}, numbers removed "
          f"{100 * r['numbers_removed']:.2f}%, junk {r['junk_per_1k']:.2f}/1k, other "
          f"{r['other_per_1k']:.2f}/1k ({r['seconds']}s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "bench-models"))
    parser.add_argument("--gold", type=int, default=300, help="gold-labelled training dialogues")
    parser.add_argument("--synthetic", type=int, default=100, help="generated training dialogues")
    parser.add_argument("--ratios", default="1,3", help="times the gold dialogues are repeated")
    parser.add_argument("--train-seconds", type=float, default=1800,
                        help="optimisation budget per model (a version stopped by it is unusable)")
    parser.add_argument("--skip-presidio", action="store_true")
    parser.add_argument("--train-only", action="store_true", help="train the missing versions, score nothing")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args(argv)
    args.ratios = [int(r) for r in args.ratios.split(",") if r]

    from pipeline.devset import build_devset

    dev = build_devset(Path(args.data))
    gold, held_out = split_gold(dev, args.gold)
    for part, ds in (("gold", gold), ("held out", held_out)):
        print(f"{part}: {len(ds)} dialogues, {sum(len(d.messages) for d in ds)} messages, "
              f"{sum(len(m.spans) for d in ds for m in d.messages)} names", flush=True)

    models = {name: ensure_model(name, ds, args) for name, ds in training_sets(args, gold).items()}
    if args.train_only:
        return 0
    rows: dict[str, dict] = {}
    for name, path in models.items():
        score(f"tagger {name}", build("tagger", {"model_path": path}), held_out, rows)
        score(f"tagger {name} raw", build("tagger", {"model_path": path, "postfilter": False}),
              held_out, rows)
    tagger_member = {"model_path": models["gen-classroom"]}
    score("ensemble (tagger gen-classroom + rules)", build("ensemble", {"tagger": tagger_member}),
          held_out, rows)
    if not args.skip_presidio:
        for preset in ("vanilla", "tuned"):
            score(f"presidio {preset}", build("presidio", {"preset": preset}), held_out, rows)
        score("ensemble + presidio tuned",
              build("ensemble", {"tagger": tagger_member, "presidio": True}), held_out, rows)

    print(f"\n{'':44}{'name R':>8}{'num rm':>9}{'junk/1k':>9}{'other/1k':>9}")
    for label, r in rows.items():
        print(f"{label:44}{r['name_recall']:8.3f}{100 * r['numbers_removed']:8.2f}%"
              f"{r['junk_per_1k']:9.2f}{r['other_per_1k']:9.2f}")
    a = rows["tagger gen-classroom"]
    for r in args.ratios:
        b = rows[f"tagger gen-classroom+goldx{r}"]
        verdict = b["name_recall"] > a["name_recall"] and b["junk_per_1k"] <= a["junk_per_1k"]
        print(f"done when (x{r}): recall {a['name_recall']:.3f} -> {b['name_recall']:.3f}, junk "
              f"{a['junk_per_1k']:.2f} -> {b['junk_per_1k']:.2f} per 1k: {'met' if verdict else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=float), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
