"""Does the user's own gold help? On the development data, does a tagger retrained from 300 gold-labelled
dialogues beat the generated-only model on name recall without more junk flags?

    nice -n 10 .venv/bin/python bench/retrain_bench.py [--data ../shared/data] [--gold 300]
        [--ratios 0,0.5,1,2] [--json PATH]

The dev set is ``../shared/data``'s real tutoring and classroom text with generated names where it
had placeholders (:mod:`pipeline.devset`: consistent per dialogue, varied in form; 15 % of the
placeholders are left as they are, unlabelled, since they are already anonymised). It is split by
dialogue exactly as ``bench/classroom_bench.py`` splits it: ``--gold`` dialogues play the project's
gold (classroom and tutoring mixed as they come), the rest are held out and every figure is
measured on them.

- (a) ``generated-only``: the demo's first tagger (``demo_setup --train-tagger``: 100 generated
  dialogues, seed 1234, strict, the generator's classroom share, its own dev split);
- (b) ``goldN+genGx``: the retraining loop's own set
  (:func:`pipeline.tagger.retrain.retraining_set`): the project's gold split by dialogue into a
  dev side (held out, never trained on; the app compares versions on it) and ``N`` training
  dialogues, plus ``G`` generated dialogues per training gold dialogue
  (``GENERATED_PER_GOLD`` in the app; ``--ratios`` tries several).

Per model on the held-out set: name recall (a gold name overlapped by any span) overall and per
set, the share of number tokens removed, numeric false positives (spans with a digit on no gold
span), junk flags per 1,000 messages (known junk kinds: fillers, maths words, initials,
placeholders …) as shipped (near 0 by construction: the post-filter drops these kinds) and raw
(without the post-filter: what the model learnt), and other flags per 1,000 messages (every
other span on no gold name: mostly names the text still has — word-problem characters, names
the upstream anonymisation missed — plus ASR fragments and typos; not all false, so reported,
not judged). The recall difference (b) - (a) gets a paired bootstrap interval over held-out
dialogues. PASS when that interval's lower bound is above 0 and (b) makes no more junk flags per
1,000 messages than (a), neither as shipped nor raw.
Each (b) is also put through the app's activation comparison against (a) on the project-gold dev
side (:func:`pipeline.metrics.comparison.compare_versions`: F2 interval, numbers, numeric FPs).
Models are trained fully (no time cut-off) once and reused from ``var/bench-models``.

``--warm`` measures a retrain warm-started from the active version against a full one instead
(:mod:`bench.warm_retrain`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.classroom_bench import (  # noqa: E402
    DEMO_SYNTHETIC,
    SETS,
    TAGGER_RUNTIME,
    Predicted,
    ensure_model,
    figures,
    generated,
    load_split,
    tagger_passes,
)
from pipeline.metrics.bootstrap import bootstrap_stats  # noqa: E402
from pipeline.metrics.comparison import compare_versions  # noqa: E402
from pipeline.metrics.comparison import dev_scores as version_scores  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.tagger.retrain import detector_predictions, retraining_set  # noqa: E402
from pipeline.types import Dialogue  # noqa: E402

CONFIDENCE = 0.95
N_BOOT = 2000


def recall_counts(dialogues: Sequence[Dialogue], pred: Predicted) -> np.ndarray:
    """``(dialogues, 4)`` counts for :func:`bootstrap_stats`: only the recall columns are filled
    (names overlapped by any span, names)."""
    out = np.zeros((len(dialogues), 4), dtype=np.int64)
    for i, (d, preds) in enumerate(zip(dialogues, pred, strict=True)):
        for m, ps in zip(d.messages, preds, strict=True):
            for g in m.spans:
                if g.label == "NAME":
                    out[i, 3] += 1
                    out[i, 2] += any(p.start < g.end and g.start < p.end for p in ps)
    return out


def recall_difference(
    dialogues: Sequence[Dialogue], new: Predicted, old: Predicted, *, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """Name recall(new) - recall(old) with its paired percentile interval (dialogues resampled)."""
    counts = np.stack([recall_counts(dialogues, new), recall_counts(dialogues, old)], axis=1)
    stats = bootstrap_stats(counts, n_boot=N_BOOT, seed=seed)[..., 1]  # column 1: recall
    diffs = stats[:, 0] - stats[:, 1]
    diffs = diffs[~np.isnan(diffs)]
    alpha = (1 - CONFIDENCE) / 2
    totals = counts.sum(axis=0)
    point = totals[0, 2] / totals[0, 3] - totals[1, 2] / totals[1, 3]
    lo, hi = np.quantile(diffs, [alpha, 1 - alpha])
    return float(point), (float(lo), float(hi))


def model_figures(dialogues: Sequence[Dialogue], path: str) -> tuple[dict, Predicted]:
    variants, seconds = tagger_passes(path, dialogues)
    shipped, raw = variants[""], variants[", raw"]
    fig = figures(dialogues, shipped)
    keyed = {
        (d.id, m.index): spans
        for d, ps in zip(dialogues, shipped, strict=True)
        for m, spans in zip(d.messages, ps, strict=True)
    }
    scores = version_scores(dialogues, keyed)
    fig["all"].update(
        numeric_fp=scores.numeric_fp,
        numbers_removed_outside_gold=scores.numbers_removed,
        raw_junk_per_1k=figures(dialogues, raw)["all"]["junk_per_1k"],
        seconds=round(seconds, 1),
    )
    return fig, shipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "bench-models"))
    parser.add_argument(
        "--gold", type=int, default=300, help="gold-labelled dialogues (train + its dev split)"
    )
    parser.add_argument(
        "--ratios",
        default="0,0.5,1,2",
        help="generated dialogues per gold dialogue, comma-separated",
    )
    parser.add_argument(
        "--train-seconds",
        type=float,
        default=3600,
        help="optimisation budget per model (a version stopped by it is unusable)",
    )
    parser.add_argument(
        "--train-only", action="store_true", help="train the missing versions, score nothing"
    )
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--warm", action="store_true", help="warm-started vs full retrain")
    parser.add_argument("--lessons", type=int, default=0,
                        help="with --warm: N generated lessons as the gold instead of the real data")
    parser.add_argument("--skip-full", action="store_true", help="with --warm: time the warm retrain only")
    args = parser.parse_args(argv)
    if args.warm:
        return warm_main(args)
    ratios = [float(r) for r in args.ratios.split(",") if r.strip()]
    if any(r < 0 for r in ratios):
        parser.error("--ratios must be non-negative numbers")

    gold, held_out = load_split(args.data, args.gold)
    models: dict[str, str] = {}
    dev_gold: list[Dialogue] = []
    for r in ratios:
        mix = retraining_set(gold, generated_per_gold=r)
        dev_gold = mix.dev
        name = f"gold{mix.gold_train}+gen{r:g}x"
        print(f"{name}: {mix.summary()}", flush=True)
        models[name] = ensure_model(name, mix.train, args)
    # the demo's model last: bench/classroom_bench.py may be training it meanwhile
    models = {
        "generated-only": ensure_model("gen-classroom", generated(DEMO_SYNTHETIC), args),
        **models,
    }
    if args.train_only:
        return 0

    rows: dict[str, dict] = {}
    preds: dict[str, Predicted] = {}
    for name, path in models.items():
        rows[name], preds[name] = model_figures(held_out, path)
    print(
        f"\nheld out: {len(held_out)} dialogues, {rows['generated-only']['all']['messages']} messages, "
        f"{rows['generated-only']['all']['names']} names; flags per 1,000 messages"
    )
    print(
        f"{'model':24}{'name R':>8}"
        + "".join(f"{'R ' + s:>12}" for s in SETS)
        + f"{'num rm':>8}{'num FP':>8}{'junk':>7}{'raw junk':>9}{'other':>7}"
    )
    for name, fig in rows.items():
        a = fig["all"]
        print(
            f"{name:24}{a['name_recall']:8.3f}"
            + "".join(f"{fig[s]['name_recall']:12.3f}" for s in SETS)
            + f"{100 * a['numbers_removed']:7.2f}%{a['numeric_fp']:8d}{a['junk_per_1k']:7.1f}"
            f"{a['raw_junk_per_1k']:9.1f}{a['other_per_1k']:7.1f}"
        )
    base = rows["generated-only"]["all"]
    verdicts = {}
    print()
    for name in models:
        if name == "generated-only":
            continue
        diff, (lo, hi) = recall_difference(held_out, preds[name], preds["generated-only"])
        new = rows[name]["all"]
        passed = (
            lo > 0
            and new["junk_per_1k"] <= base["junk_per_1k"]
            and new["raw_junk_per_1k"] <= base["raw_junk_per_1k"]
        )
        verdicts[name] = {"recall_diff": diff, "ci": [lo, hi], "pass": passed}
        print(
            f"{name} vs generated-only: name recall {diff:+.3f} ({CONFIDENCE:.0%} CI {lo:+.3f} to {hi:+.3f}), "
            f"junk flags {new['junk_per_1k']:.1f} vs {base['junk_per_1k']:.1f} (raw {new['raw_junk_per_1k']:.1f} "
            f"vs {base['raw_junk_per_1k']:.1f}) per 1,000 messages: {'PASS' if passed else 'MISS'}"
        )
    if dev_gold:
        print(
            f"\nthe app's activation check on the project-gold dev side ({len(dev_gold)} dialogues):"
        )
        old = detector_predictions(
            build("tagger", {"model_path": models["generated-only"], **TAGGER_RUNTIME}), dev_gold
        )
        for name in verdicts:
            new = detector_predictions(
                build("tagger", {"model_path": models[name], **TAGGER_RUNTIME}), dev_gold
            )
            c = compare_versions(dev_gold, new, old)
            verdicts[name]["activation"] = c.to_dict()
            print(f"  {name}: {'better' if c.better else 'not better'}: {'; '.join(c.reasons)}")
    if verdicts:
        best = max(verdicts, key=lambda n: (verdicts[n]["pass"], verdicts[n]["recall_diff"]))
        print(f"best mix: {best}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"rows": rows, "verdicts": verdicts}, indent=1, default=float),
            encoding="utf-8",
        )
    return 0


def warm_main(args) -> int:
    from bench.warm_retrain import report, warm_vs_full

    rows = report(warm_vs_full(args), model_figures, recall_difference)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=float), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
