"""How long the tagger takes to train on 5,000 generated messages with the default settings.

Target: ≤ 10 minutes on the 2 cores here. Usage: .venv/bin/python bench/train_time_bench.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    from pipeline.synthetic import generate_messages
    from pipeline.tagger import TrainConfig, train_tagger

    dialogues = generate_messages(args.messages, seed=args.seed, id_prefix="train")
    n = sum(len(d.messages) for d in dialogues)
    with tempfile.TemporaryDirectory() as out:
        t0, c0 = time.perf_counter(), time.process_time()
        info = train_tagger(TrainConfig(dialogues, None, name="timing", out_dir=out))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    recall_first = (info.dev_metrics or {}).get("recall_first", {})
    print(f"training data       {len(dialogues):,} dialogues, {n:,} messages (10% held out for dev)")
    print(f"defaults            {info.hyper}")
    print(f"training time       {wall / 60:.1f} min wall, {cpu:.0f} CPU-s")
    print(f"dev F2 recall_first {recall_first.get('f2')}")
    print(f"target ≤ 10 min     {'MET' if wall <= 600 else 'MISSED'}")


if __name__ == "__main__":
    main()
