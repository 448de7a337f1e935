"""Time ``math_segments`` (with and without embeddings), ``rules`` beside it, and the evaluation.

On the demo generator: segmentation over ``--messages`` (default 20,000) messages, then
:func:`pipeline.metrics.evaluation.evaluate` with 1,000 dialogue-bootstrap resamples over
``--eval-messages`` (default 115,620, MathEd-PII's size) with the rules detector's predictions.
Targets: rules + math_segments >= 2,000 messages/s on 2 cores.

    .venv/bin/python bench/segments_bench.py [--messages 20000] [--eval-messages 115620]
        [--threads 0] [--skip-embed]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import peak_rss_mb  # noqa: E402
from pipeline.corpus import gold_from_dialogues  # noqa: E402
from pipeline.metrics.evaluation import evaluate  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.synthetic.generator import generate_messages  # noqa: E402
from pipeline.types import MATH  # noqa: E402

CPU: dict[str, float] = {}


def timed(detector, dialogues, label: str = "") -> tuple[float, list]:
    """Wall seconds (and, under ``label``, CPU seconds: what a dedicated core would need)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = [x for dets in detector.detect_many(dialogues) for x in dets]
    if label:
        CPU[label] = time.process_time() - cpu
    return time.perf_counter() - start, out


def per_cpu(n: int, *labels: str) -> str:
    return f"{n / sum(CPU[k] for k in labels):>8,.0f} msg/CPU-s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--eval-messages", type=int, default=115_620)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: auto)")
    ap.add_argument("--skip-embed", action="store_true")
    args = ap.parse_args()
    print(f"CPUs {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}")

    dialogues = generate_messages(args.messages, seed=11)
    n = sum(len(d.messages) for d in dialogues)
    print(f"{n:,} demo messages in {len(dialogues):,} dialogues")

    rules = build("rules")
    t_rules, pred_rows = timed(rules, dialogues, "rules")
    print(f"rules                     {n / t_rules:>8,.0f} msg/s   {per_cpu(n, 'rules')}")

    density = build("math_segments", {"embed": False})
    t_dens, _ = timed(density, dialogues, "density")
    print(
        f"math_segments embed=false {n / t_dens:>8,.0f} msg/s   "
        f"with rules {n / (t_rules + t_dens):>8,.0f} msg/s   "
        f"CPU: {per_cpu(n, 'density')}, with rules {per_cpu(n, 'rules', 'density')}"
    )

    if not args.skip_embed:
        seg = build("math_segments", {"threads": args.threads})
        load_start = time.perf_counter()
        seg.embed(["warm up"])
        load_s = time.perf_counter() - load_start
        seg.embedded = 0
        t_seg, rows = timed(seg, dialogues, "embed")
        math_share = sum(r.segment == MATH for r in rows) / n
        print(
            f"math_segments embed=true  {n / t_seg:>8,.0f} msg/s   "
            f"with rules {n / (t_rules + t_seg):>8,.0f} msg/s   "
            f"CPU: {per_cpu(n, 'embed')}, with rules {per_cpu(n, 'rules', 'embed')}\n"
            f"    (model load {load_s:.1f}s, {seg.model_version}, embedded {seg.embedded:,} "
            f"texts = {seg.embedded / n:.0%} of messages, MATH {math_share:.0%})"
        )

    big = generate_messages(args.eval_messages, seed=12)
    texts = {(d.id, m.index): m.text for d in big for m in d.messages}
    gold = gold_from_dialogues(big)
    _, pred_rows = timed(rules, big)
    _, seg_rows = timed(density, big)
    pred = {(r.dialogue_id, r.index): list(r.spans) for r in pred_rows}
    segments = {(r.dialogue_id, r.index): r.segment for r in seg_rows}
    start = time.perf_counter()
    evaluate(texts=texts, gold=gold, pred=pred, segments=segments, n_boot=0)
    t0 = time.perf_counter() - start
    start = time.perf_counter()
    report = evaluate(texts=texts, gold=gold, pred=pred, segments=segments, n_boot=1000, seed=0)
    t1 = time.perf_counter() - start
    print(
        f"evaluate {len(texts):,} messages / {report.n_dialogues:,} dialogues: "
        f"{t0:.1f}s without bootstrap, {t1:.1f}s with 1,000 resamples "
        f"(bootstrap {max(t1 - t0, 0):.1f}s)"
    )
    print(f"peak RSS {peak_rss_mb():,.0f} MB")


if __name__ == "__main__":
    main()
