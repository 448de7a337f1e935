"""Build the anonymized release of 115,620 generated messages (the size of MathEd-PII); print figures.

1. release from gold spans (surrogate mode, corpus sweep, leak check, utility report, mapping
   table), streaming through ``pipeline.surrogates.batch.deidentify_file`` — target ≤ 60 s;
2. ``manage.py deidentify CORPUS.jsonl --detector tagger`` on the same corpus, in a child process
   so its peak RSS is its own — needs a trained tagger under ``var/models`` (skipped, and said so,
   when there is none).

Usage: .venv/bin/python bench/release_bench.py [--messages N] [--skip-tagger] [--detector NAME]
       [--tagger-messages N]
No database is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import write_generated_corpus  # noqa: E402

BENCH_KEY = "release-bench-key-not-secret"


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def gold_release(corpus: Path, out: Path) -> None:
    from pipeline.surrogates.batch import deidentify_file

    rss0 = peak_rss_mb()
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    summary = deidentify_file(corpus, out, key=BENCH_KEY)
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    u = summary["utility"]
    print(f"release (gold)      {summary['messages']:,} messages, {summary['spans']:,} spans, "
          f"{summary['originals']:,} distinct originals")
    print(f"                    {seconds:.1f} s  ->  {summary['messages'] / seconds:,.0f} messages/s "
          f"(spans pass {summary['seconds']['spans']:.1f} s, release pass {summary['seconds']['release']:.1f} s)")
    print(f"                    CPU time {cpu:.1f} s (wall time depends on how busy the machine is; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"leak check          {summary['leaks']} leak(s); publishable: {summary['publishable']}")
    print(f"maths preserved     numbers {u['number_tokens']['preserved']:,}/{u['number_tokens']['outside_pii']:,}, "
          f"expressions {u['math_expressions']['preserved']:,}/{u['math_expressions']['outside_pii']:,}")
    print(f"fallbacks           {summary['fallbacks']}; by method {u['replaced_by_method']}")
    print(f"words/turn          {u['before']['words_per_turn']} -> {u['after']['words_per_turn']}; "
          f"vocabulary {u['before']['vocabulary']:,} -> {u['after']['vocabulary']:,}; "
          f"3-gram entropy {u['before']['entropy_3gram']} -> {u['after']['entropy_3gram']}")
    print(f"peak RSS            {peak_rss_mb():.0f} MB (before: {rss0:.0f} MB)")
    print(f"target ≤ 60 s       {'MET' if seconds <= 60 else 'MISSED'}")


def detector_release(corpus: Path, out: Path, detector: str, n_messages: int) -> None:
    cmd = [sys.executable, str(ROOT / "manage.py"), "deidentify", str(corpus), "--detector", detector,
           "--out", str(out), "--key", BENCH_KEY]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"deidentify {detector:<8} not run: {' / '.join(tail)}")
        return
    print(f"deidentify {detector:<8} {n_messages:,} messages in {seconds:.1f} s  ->  "
          f"{n_messages / seconds:,.0f} messages/s (process start and model load included)")
    print(f"                    peak RSS of the command: {peak_rss_mb(resource.RUSAGE_CHILDREN):.0f} MB")
    for line in proc.stdout.strip().splitlines()[-4:]:
        print(f"                    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=115_620)
    parser.add_argument("--detector", default="tagger")
    parser.add_argument("--skip-tagger", action="store_true")
    parser.add_argument("--tagger-messages", type=int, default=0,
                        help="Run the detector part on the first dialogues holding about this many messages "
                             "(default: the whole corpus; the tagger on CPU takes a while).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        t0 = time.perf_counter()
        n_dialogues, n_messages = write_generated_corpus(corpus, args.messages)
        print(f"corpus              {n_dialogues:,} dialogues, {n_messages:,} messages, "
              f"{corpus.stat().st_size / 1e6:.1f} MB (generated in {time.perf_counter() - t0:.1f} s)")
        gold_release(corpus, Path(tmp) / "release.jsonl")
        if not args.skip_tagger:
            sub, n_sub = corpus, n_messages
            if args.tagger_messages and args.tagger_messages < n_messages:
                sub, n_sub = Path(tmp) / "subset.jsonl", 0
                with open(corpus, encoding="utf-8") as src, open(sub, "w", encoding="utf-8") as dst:
                    for line in src:
                        if n_sub >= args.tagger_messages:
                            break
                        dst.write(line)
                        n_sub += len(json.loads(line)["messages"])
                print(f"detector subset     first {n_sub:,} messages of the corpus")
            detector_release(sub, Path(tmp) / f"release-{args.detector}.jsonl", args.detector, n_sub)


if __name__ == "__main__":
    main()
