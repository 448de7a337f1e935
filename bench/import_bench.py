"""Import 115,620 generated messages (the size of MathEd-PII) into PostgreSQL; print the rate
and the import's peak RSS.

The file is generated a dialogue at a time (``iter_corpus``), never held, so the process's peak
RSS after the import is the import's (it must not grow with the file; compare two
sizes). Run with ``DEBUG=0``: Django's debug query log keeps every batch's SQL.
Target: ≤ 60 s. Usage: .venv/bin/python bench/import_bench.py [--messages N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import peak_rss_mb, setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=115_620)
    args = parser.parse_args()
    url = setup_django(fresh=True)

    from annotator.services.imports import corpus_import_file
    from annotator.services.projects import project_create
    from pipeline.corpus import dialogue_to_obj
    from pipeline.synthetic.generator import iter_corpus

    t0 = time.perf_counter()
    n_messages = 0
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for d in iter_corpus(10**9, 42):
            fh.write(json.dumps(dialogue_to_obj(d), ensure_ascii=False) + "\n")
            n_messages += len(d.messages)
            if n_messages >= args.messages:
                break
        path = Path(fh.name)
    gen_s = time.perf_counter() - t0
    size_mb = path.stat().st_size / 1e6

    project = project_create(name="Import bench", slug="import-bench")
    rss_before = peak_rss_mb()
    t0 = time.perf_counter()
    result = corpus_import_file(project=project, path=path, spans_as="run")
    seconds = time.perf_counter() - t0
    path.unlink()

    print(f"database            {url}")
    print(f"corpus              {result.dialogues:,} dialogues, {n_messages:,} messages, "
          f"{result.spans:,} spans, {size_mb:.1f} MB (generated in {gen_s:.1f}s)")
    print(f"import (one txn)    {seconds:.1f} s  ->  {n_messages / seconds:,.0f} messages/s")
    print(f"peak RSS            {peak_rss_mb():.0f} MB (before import: {rss_before:.0f} MB)")
    print(f"target ≤ 60 s       {'MET' if seconds <= 60 else 'MISSED'}")


if __name__ == "__main__":
    main()
