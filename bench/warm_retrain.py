"""A warm-started retrain against a full one, on the same split: does it keep a full retrain's gain
in a fraction of its time?

    nice -n 10 .venv/bin/python bench/retrain_bench.py --warm [--gold 300] [--lessons N] [--skip-full]

The active version is the demo's generated-only tagger (``gen-classroom``, as the first retrain
of a project finds it). Both retrains train on the same project gold and are judged on the same
held-out dialogues and on the same project-gold dev side, as the app's retrain job runs them:

- ``full``: :func:`pipeline.tagger.retrain.retraining_set` trained from the base model;
- ``warm``: :func:`pipeline.tagger.retrain.warm_retraining_set` (the gold the parent has not
  seen, a sample of the old, generated replay) trained from the parent with ``WARM_START``.

Each is timed as the job spends it: training (with the app's precision checks and ONNX export)
plus scoring the new and the active version on the dev side. ``--lessons N`` replaces the real
gold with N generated whole-class lessons of about 420 messages (150 of them ≈ 63k messages, a
lab's transcripts; for timing: their recall is on generated text). Printed: wall time, steps and why
training stopped, name recall on the held-out dialogues, numeric false positives, the app's
activation decision against the parent, and warm - full name recall with a paired bootstrap CI.
"""

from __future__ import annotations

import os
import time

from bench.classroom_bench import (
    DEMO_SYNTHETIC,
    TAGGER_RUNTIME,
    ensure_model,
    generated,
    load_split,
)
from pipeline.metrics.comparison import compare_versions
from pipeline.registry import build
from pipeline.tagger import TrainConfig, read_info, train_tagger
from pipeline.tagger.retrain import (
    GENERATED_PER_GOLD,
    GENERATED_REPLAY,
    WARM_START,
    RetrainingSet,
    detector_predictions,
    retraining_set,
    warm_retraining_set,
)
from pipeline.types import Dialogue

LESSON_LENGTH = (400, 440)  # messages per generated lesson: 150 of them ≈ 63k messages


def lessons(n: int, seed: int) -> list[Dialogue]:
    from pipeline.synthetic import generate_corpus

    return generate_corpus(n, seed, classroom=1.0, length=LESSON_LENGTH, id_prefix=f"lesson{seed}")


def data_split(args) -> tuple[list[Dialogue], list[Dialogue]]:
    """(gold, held out): the real development data's, or generated lessons (``--lessons``)."""
    if not args.lessons:
        return load_split(args.data, args.gold)
    gold, held_out = lessons(args.lessons, 77), lessons(max(4, args.lessons // 5), 78)
    for part, ds in (("gold", gold), ("held out", held_out)):
        print(f"{part}: {len(ds)} generated lessons, {sum(len(d.messages) for d in ds)} messages", flush=True)
    return gold, held_out


def timed_retrain(name: str, data: RetrainingSet, parent: str, args, **options) -> tuple[str, dict]:
    """Train as the job does, then score the new and the active version on the dev side; the
    version's path and its timings, steps and activation comparison."""
    t0 = time.perf_counter()
    info = train_tagger(TrainConfig(
        data.train, data.tune, name=name, out_dir=args.model_dir, progress=None, **options
    ))
    trained = time.perf_counter() - t0
    new = detector_predictions(build("tagger", {"model_path": info.path, **TAGGER_RUNTIME}), data.dev)
    old = detector_predictions(build("tagger", {"model_path": parent, **TAGGER_RUNTIME}), data.dev)
    comparison = compare_versions(data.dev, new, old)
    t = info.training
    row = {
        "train_seconds": round(trained, 1), "job_seconds": round(time.perf_counter() - t0, 1),
        "steps": t["steps"], "planned_steps": t["planned_steps"], "stopped": t["stopped"],
        "best_step": t.get("best_step"), "data": data.summary(),
        "activation": {"better": comparison.better, "reasons": comparison.reasons},
    }
    print(f"{name}: {row}", flush=True)
    return info.path, row


def warm_vs_full(args) -> dict:
    """Train the parent (once), then the warm and (unless ``--skip-full``) the full retrain."""
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    gold, held_out = data_split(args)
    parent = ensure_model("gen-classroom", generated(DEMO_SYNTHETIC), args)
    info = read_info(parent)
    seen = set(info.train_ids)
    tag = f"{'lessons' if args.lessons else 'gold'}{args.lessons or args.gold}"
    paths, rows = {}, {}
    warm = warm_retraining_set(gold, seen, parent=info.full_version, generated_per_gold=GENERATED_REPLAY)
    paths["warm"], rows["warm"] = timed_retrain(f"warm-{tag}", warm, parent, args,
                                                init_from=parent, **WARM_START)
    if not args.skip_full:
        full = retraining_set(gold, generated_per_gold=GENERATED_PER_GOLD)
        paths["full"], rows["full"] = timed_retrain(f"full-{tag}", full, parent, args)
    print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)
    return {"paths": {"parent": parent, **paths}, "rows": rows, "held_out": held_out}


def report(result: dict, model_figures, recall_difference) -> dict:
    """Held-out figures per version and warm - full (and each - parent) name recall with its CI."""
    held_out, paths, rows = result["held_out"], result["paths"], result["rows"]
    preds = {}
    print(f"\n{'version':8}{'job min':>9}{'train min':>10}{'steps':>12}  {'stopped':16}{'name R':>8}"
          f"{'num FP':>8}{'junk':>7}  activation vs parent")
    for name, path in paths.items():
        fig, preds[name] = model_figures(held_out, path)
        a, row = fig["all"], rows.get(name, {})
        rows.setdefault(name, {})["held_out"] = a
        steps = f"{row['steps']}/{row['planned_steps']}" if row else "-"
        print(f"{name:8}{row.get('job_seconds', 0) / 60:9.1f}{row.get('train_seconds', 0) / 60:10.1f}{steps:>12}  "
              f"{row.get('stopped', '-'):16}{a['name_recall']:8.3f}{a['numeric_fp']:8d}{a['junk_per_1k']:7.1f}  "
              f"{'better' if row.get('activation', {}).get('better') else ('not better' if row else '-')}")
    pairs = [("warm", "full"), ("warm", "parent"), ("full", "parent")]
    for new, old in pairs:
        if new in preds and old in preds:
            diff, (lo, hi) = recall_difference(held_out, preds[new], preds[old])
            rows[f"{new}-{old}"] = {"recall_diff": diff, "ci": [lo, hi]}
            print(f"name recall {new} - {old}: {diff:+.3f} (95% CI {lo:+.3f} to {hi:+.3f}) on "
                  f"{len(held_out)} held-out dialogues")
    return rows
