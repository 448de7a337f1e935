"""The utility report's n-gram counts at a million messages: peak memory held vs spilled (issue 26).

A release's utility report counts every distinct 1-3-gram before and after de-identification. The
generated corpus repeats its templates, so the scale bench hides how many distinct n-grams real
text has; this bench counts text with a realistic spread instead: words drawn from a Zipf
vocabulary (``--types`` word types, exponent 1.1), each message 3-25 words. Printed first, when
``../shared/data`` is there, is how many distinct 3-grams real tutoring text has per word, beside
the generated text's, so the two can be compared.

Each mode runs in a child process of its own, so its peak RSS is its own:
``held`` (everything in memory: the report before issue 26's spill) and ``spilled`` (the default
bound, :data:`pipeline.surrogates.utility.SPILL_AT`).

Usage: .venv/bin/python bench/utility_memory_bench.py [--messages 1000000] [--types 200000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared" / "data"


def _texts(messages: int, types: int, seed: int = 5):
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(types)]
    weights = [1 / (rank + 1) ** 1.1 for rank in range(types)]
    cum = list(itertools.accumulate(weights))
    for _ in range(messages):
        yield " ".join(rng.choices(vocabulary, cum_weights=cum, k=rng.randint(3, 25)))


def _count(messages: int, types: int, spill_at: int) -> dict:
    from pipeline.surrogates.utility import NgramCounts, TextStats

    t0 = time.perf_counter()
    stats = TextStats(ngrams=NgramCounts(spill_at=spill_at))
    for text in _texts(messages, types):
        stats.add(text)
    counted = time.perf_counter() - t0
    figures = stats.ngrams.figures()
    return {"words": stats.words, "distinct": {n: f[0] for n, f in figures.items()},
            "figures": stats.to_dict(), "count_s": round(counted, 1),
            "figures_s": round(time.perf_counter() - t0 - counted, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def _real_ratio() -> str:
    from pipeline.surrogates.utility import TextStats

    files = sorted(SHARED.glob("*.jsonl"))
    if not files:
        return "no ../shared/data here"
    stats = TextStats()
    for path in files:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                for m in json.loads(line).get("messages", ()):  # the dialogue files, not the span lists
                    stats.add(m["text"])
    distinct = stats.ngrams.figures()[3][0]
    return f"{distinct / stats.words:.2f} distinct 3-grams per word over {stats.words:,} words of ../shared/data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--types", type=int, default=200_000)
    parser.add_argument("--child", choices=("held", "spilled"))
    args = parser.parse_args()
    if args.child:
        from pipeline.surrogates.utility import SPILL_AT

        print(json.dumps(_count(args.messages, args.types, 10**12 if args.child == "held" else SPILL_AT)))
        return
    small = _count(min(args.messages, 10_000), args.types, 10**12)
    print(f"real text           {_real_ratio()}")
    print(f"this bench's text   {small['distinct'][3] / small['words']:.2f} distinct 3-grams per word "
          f"over {small['words']:,} words (10,000 messages)")
    results = {}
    for mode in ("held", "spilled"):
        out = subprocess.run([sys.executable, __file__, "--messages", str(args.messages), "--types", str(args.types),
                              "--child", mode], capture_output=True, text=True, check=True)
        results[mode] = r = json.loads(out.stdout)
        print(f"{mode:<8}            {args.messages:,} messages, {r['words']:,} words, distinct n-grams "
              f"{r['distinct']}: counted in {r['count_s']} s, figures in {r['figures_s']} s, "
              f"peak RSS {r['peak_rss_mb']:,} MB")
    same = results["held"]["figures"] == results["spilled"]["figures"]
    print(f"figures             {'the same' if same else 'DIFFERENT'}: {results['spilled']['figures']}")


if __name__ == "__main__":
    main()
