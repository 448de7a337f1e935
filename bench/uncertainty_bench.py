"""Does "where the model is least sure" find the tagger's mistakes? (issue 16 item 2)

    .venv/bin/python bench/uncertainty_bench.py [--model PATH] [--data ../shared/data] [--dev-limit 300]

Runs the ``tagger`` detector over gold-labelled dialogues and ranks every message by its decision
margin (``pipeline.tags.decision_margin``), as a "least sure" plan does. A message is a
*mistake* when a gold span has no overlapping predicted span (a miss) or a predicted span overlaps
no gold span (a false flag). For budgets of 5, 10 and 20 % of the messages it prints the mistake
rate among the least-sure messages, the share of all mistakes (and of all misses) they hold, and
the lift over a random sample of the same size (whose expected share is the budget itself).

Sets: the demo gold (``annotator/demo/demo_corpus.jsonl``, generated with another seed than the
training data) and, when ``--data`` exists, the dev set built from real tutoring text
(``pipeline.devset``: names put back at the placeholders; every other flag is a false flag).
Without ``--model`` it trains a small tagger on generated data first (a few minutes on a CPU).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.formats import read_corpus  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.types import Dialogue, Span  # noqa: E402

DEMO = ROOT / "annotator" / "demo" / "demo_corpus.jsonl"
TRAIN_SEED = 2026  # not the demo corpus's seed (7)
BUDGETS = (0.05, 0.10, 0.20)


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def message_rows(detector, dialogues: list[Dialogue]) -> list[tuple[float, bool, bool]]:
    """``(margin, mistake, miss)`` per message that has a margin."""
    rows = []
    for dialogue, dets in zip(dialogues, detector.detect_many(dialogues), strict=True):
        for message, det in zip(dialogue.messages, dets, strict=True):
            if det.margin is None:
                continue
            gold, pred = list(message.spans), list(det.spans)
            miss = any(not any(_overlaps(g, p) for p in pred) for g in gold)
            false_flag = any(not any(_overlaps(p, g) for g in gold) for p in pred)
            rows.append((det.margin, miss or false_flag, miss))
    return rows


def report(name: str, rows: list[tuple[float, bool, bool]]) -> None:
    rows = sorted(rows, key=lambda r: r[0])
    n, mistakes, misses = len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"\n{name}: {n} messages, {mistakes} with a mistake ({mistakes / n:.1%}), {misses} with a miss")
    print("  budget  least-sure  mistake rate  share of mistakes  share of misses  lift")
    for share in BUDGETS:
        top = rows[:max(1, round(share * n))]
        got, got_miss = sum(r[1] for r in top), sum(r[2] for r in top)
        of_all = got / mistakes if mistakes else float("nan")
        of_miss = got_miss / misses if misses else float("nan")
        print(f"  {share:>5.0%}  {len(top):>10}  {got / len(top):>12.1%}  {of_all:>17.1%}  {of_miss:>15.1%}"
              f"  {of_all / share:>4.1f}x")


def ensure_model(args) -> str:
    if args.model:
        return args.model
    from pipeline.synthetic import generate_messages
    from pipeline.tagger import TrainConfig, train_tagger

    print(f"training a {args.layers}-layer tagger on {args.train_messages} generated messages …", flush=True)
    info = train_tagger(TrainConfig(generate_messages(args.train_messages, seed=TRAIN_SEED), name="uncertainty-bench",
                        out_dir=args.model_dir, num_layers=args.layers, epochs=args.epochs))
    print(f"trained {info.full_version} in {info.training_seconds:.0f}s", flush=True)
    return info.path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="A saved tagger version directory (default: train one).")
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--train-messages", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--policy", default="recall_first", choices=("recall_first", "strict"))
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--dev-limit", type=int, default=300, help="Real dialogues for the dev set.")
    args = parser.parse_args(argv)
    model = ensure_model(args)
    detector = build("tagger", {"model_path": str(model), "policy": args.policy, "backend": "torch",
                                "precision": "fp32"})
    if args.model is None:
        from pipeline.tagger.store import read_info

        # a bench-trained model may be refused for app use (e.g. its int8 ONNX export missed the
        # 0.01 F1 bar); the bench runs it in fp32 torch, which those checks do not concern
        detector._info = read_info(model)
    print(f"model {detector.model_version}, policy {args.policy}")
    report("demo gold", message_rows(detector, list(read_corpus(DEMO))))
    if Path(args.data).is_dir():
        from pipeline.devset import build_devset

        report("real tutoring text (names put back)",
               message_rows(detector, build_devset(Path(args.data), limit=args.dev_limit)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
