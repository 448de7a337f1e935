"""What a release's worker holds per distinct original (issue 26): the leak check's index and the
de-identifier's, in bytes per original, at two corpus sizes.

Every part of a release checks its dialogues against every original of the corpus (the leak
check: no original may appear anywhere in the release) and never picks one as a surrogate, so
each worker that builds parts holds both indexes for the whole corpus: they grow with the corpus's
distinct identifiers (names, e-mails, ids), not with its messages, and are what a worker of a
larger corpus needs beyond the 100k figure. Measured with ``tracemalloc`` (Python's allocations
for the structures alone) on the generated corpus's originals (``collect_spans``, as a release's
first pass collects them).

Usage: .venv/bin/python bench/originals_memory_bench.py [--messages 100000 300000]
"""

from __future__ import annotations

import argparse
import io
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def measure(messages: int) -> None:
    from pipeline.surrogates import Deidentifier
    from pipeline.surrogates.batch import collect_spans
    from pipeline.surrogates.leaks import LeakChecker
    from pipeline.synthetic import generate_messages

    originals = collect_spans(generate_messages(messages, seed=3), None, io.StringIO()).originals
    labels = ", ".join(f"{label} {n:,}" for label, n in Counter(lab for lab, _ in originals).most_common(4))
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    checker = LeakChecker(sorted(originals))
    leak = tracemalloc.get_traced_memory()[0] - start
    engine = Deidentifier(key="originals-bench-key", forbidden=originals)
    deid = tracemalloc.get_traced_memory()[0] - start - leak
    tracemalloc.stop()
    n = len(originals)
    print(f"{messages:>9,} messages  {n:>7,} originals ({labels}, …)  leak index {leak / 1e6:6.1f} MB "
          f"({leak / n:,.0f} B each)  engine {deid / 1e6:6.1f} MB ({deid / n:,.0f} B each)  "
          f"together {(leak + deid) / n:,.0f} B per original", flush=True)
    del checker, engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[100_000, 300_000])
    for messages in parser.parse_args().messages:
        measure(messages)


if __name__ == "__main__":
    main()
