"""Time the agreement report on a MathEd-PII-sized study.

Generates 115,620 synthetic messages (dialogues of ~30 messages), two annotators who label every
message under a randomized blind/aware condition, and computes every agreement figure with 1,000
dialogue-bootstrap resamples. Target: <= 30 s.

    .venv/bin/python bench/agreement_bench.py [--messages 115620] [--annotators 2] [--boot 1000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.metrics.agreement import AnnotatedItem, AnnotatorLabels, agreement_report  # noqa: E402
from pipeline.types import DEFAULT_LABELS, MATH, NON_MATH, Span  # noqa: E402

FILLER = ("so", "what", "is", "the", "next", "step", "we", "multiply", "both", "sides", "by",
          "3", "x", "=", "12", "great", "job", "let's", "try", "1/2", "of", "48", "okay", "yes")
PII = (("Maya", "NAME"), ("Jordan", "NAME"), ("Lincoln High", "SCHOOL"), ("Denver", "LOCATION"),
       ("14", "AGE"), ("maya@example.org", "EMAIL"), ("555-0134", "PHONE"),
       ("mathwiz99", "USERNAME"), ("Algebra 300", "COURSE"))


def make_items(n_messages: int, n_annotators: int, seed: int) -> list[AnnotatedItem]:
    rng = random.Random(seed)
    annotators = [f"ann{i + 1}" for i in range(n_annotators)]
    items = []
    for m in range(n_messages):
        d, idx = divmod(m, 30)
        words = [rng.choice(FILLER) for _ in range(rng.randint(3, 20))]
        truth: list[tuple[int, str]] = []
        if rng.random() < 0.08:
            pos = rng.randrange(len(words) + 1)
            surface, label = rng.choice(PII)
            words.insert(pos, surface)
            truth.append((pos, label))
        starts, off = [], 0
        for w in words:
            starts.append(off)
            off += len(w) + 1
        text = " ".join(words)
        anns = {}
        for a in annotators:
            spans = []
            for pos, label in truth:
                if rng.random() < 0.9:
                    lab = label if rng.random() < 0.95 else "OTHER_IDENTIFIER"
                    end = starts[pos] + len(words[pos])
                    if rng.random() < 0.05 and end > starts[pos] + 1:
                        end -= 1  # a boundary slip
                    spans.append(Span(starts[pos], end, lab))
            if rng.random() < 0.01:  # a false alarm on a filler word
                pos = rng.randrange(len(words))
                if all(p != pos for p, _ in truth):
                    spans.append(Span(starts[pos], starts[pos] + len(words[pos]), "NAME"))
            anns[a] = AnnotatorLabels(tuple(spans), rng.choice(("blind", "aware")))
        items.append(AnnotatedItem(f"d{d:05d}", idx, text, rng.choice(("tutor", "student")),
                                   rng.choice((MATH, NON_MATH)), anns))
    return items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=115_620)
    ap.add_argument("--annotators", type=int, default=2)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    items = make_items(args.messages, args.annotators, args.seed)
    t1 = time.perf_counter()
    report = agreement_report(items, labels=DEFAULT_LABELS, n_boot=args.boot, seed=args.seed)
    t2 = time.perf_counter()
    kappa = report.get("cohen_kappa", scheme="typed")
    alpha = report.get("krippendorff_alpha", scheme="typed")
    print(f"generated {len(items):,} messages x {args.annotators} annotators "
          f"({report.n_tokens:,} tokens, {report.n_dialogues:,} dialogues) in {t1 - t0:.1f} s")
    print(f"agreement report: {len(report.figures):,} figures, {args.boot} resamples "
          f"in {t2 - t1:.1f} s (target <= 30 s)")
    if kappa is not None and alpha is not None:
        print(f"cohen kappa {kappa.pair}: {kappa.value:.3f} [{kappa.ci_low:.3f}, "
              f"{kappa.ci_high:.3f}]; krippendorff alpha {alpha.value:.3f} "
              f"[{alpha.ci_low:.3f}, {alpha.ci_high:.3f}]")


if __name__ == "__main__":
    main()
