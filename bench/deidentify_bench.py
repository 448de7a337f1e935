"""Time ``manage.py deidentify --detector tagger`` with one worker and with two; print the figures.

    .venv/bin/python bench/deidentify_bench.py [--messages 115620] [--workers 1,2]
        [--source shared|synthetic] [--model PATH | --model-dir var/models --name synthetic]

The corpus holds ``--messages`` messages: the dialogues of ../shared/data (bridge, ncte_uptake)
repeated under new ids, or generated ones (``--source synthetic``; the default when the shared
data is absent). Each run is the whole command in a child process (start, model loading, both
passes, reports); its peak RSS is the largest sum over the command and all its workers, sampled
every 0.1 s from /proc. The runs must write byte-identical releases, mapping tables and reports.

Targets: 115,620 messages in <= 10 min with 2 workers, peak RSS <= 2.5 GB; the time is
projected from the measured rate, so a smaller ``--messages`` gives an estimate (start-up and
model loading are counted in full, so it errs slow). Needs a trained tagger: without ``--model``
it uses or trains one as ``bench/tagger_bench.py`` does. No database is needed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.tagger_bench import TRAIN_SEED, ensure_model  # noqa: E402
from pipeline.tagger.training.config import DEFAULT_NUM_LAYERS  # noqa: E402

TARGET_MESSAGES = 115_620
TARGET_SECONDS = 600
TARGET_RSS_MB = 2.5 * 1024
BENCH_KEY = "deidentify-bench-key-not-secret"
SHARED_FILES = ("bridge.jsonl", "ncte_uptake.jsonl")
COMPARED = ("release.jsonl", "release.mapping.jsonl", "release.leaks.json", "release.utility.json")


# --- corpus ----------------------------------------------------------------------------------


def _shared_rows(data: Path) -> Iterator[dict]:
    """The shared dialogues over and over, each pass under new ids."""
    rows = [json.loads(line) for name in SHARED_FILES for line in (data / name).open(encoding="utf-8")
            if line.strip()]
    for k in range(10**9):
        for row in rows:
            yield {**row, "id": f"{row['id']}~{k}"}


def _synthetic_rows() -> Iterator[dict]:
    from pipeline.synthetic import dialogue_to_row, iter_corpus

    for d in iter_corpus(10**9, seed=TRAIN_SEED + 1):
        row = dialogue_to_row(d)
        for m in row["messages"]:
            m.pop("spans", None)  # the detector finds them
        yield row


def write_corpus(path: Path, messages: int, source: str, data: Path) -> tuple[int, int]:
    rows = _shared_rows(data) if source == "shared" else _synthetic_rows()
    dialogues = n = 0
    with open(path, "w", encoding="utf-8") as fh:
        while n < messages:
            row = next(rows)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            dialogues += 1
            n += len(row["messages"])
    return dialogues, n


# --- one run ---------------------------------------------------------------------------------


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, in MB (0 once it has gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total / 1024


def run(corpus: Path, out_dir: Path, model: str, workers: int) -> dict:
    out_dir.mkdir()
    cmd = [sys.executable, str(ROOT / "manage.py"), "deidentify", str(corpus), "--out",
           str(out_dir / "release.jsonl"), "--key", BENCH_KEY, "--detector", "tagger",
           "--config", json.dumps({"model_path": model}), "--workers", str(workers)]
    log = out_dir / "command.log"
    peak = 0.0
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            peak = max(peak, tree_rss_mb(proc.pid))
            time.sleep(0.1)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"deidentify --workers {workers} failed:\n{log.read_text()[-2000:]}")
    summary = json.loads((out_dir / "release.summary.json").read_text())
    digest = hashlib.sha256(b"".join((out_dir / name).read_bytes() for name in COMPARED)).hexdigest()
    return {"workers": workers, "seconds": seconds, "rss_mb": peak, "messages": summary["messages"],
            "spans": summary["spans"], "model_version": summary["model_version"], "digest": digest,
            "passes": summary["seconds"]}


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=TARGET_MESSAGES)
    parser.add_argument("--workers", default="1,2", help="worker counts to time, comma-separated")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--source", choices=("shared", "synthetic"), default=None,
                        help="default: shared when --data holds the files, else synthetic")
    parser.add_argument("--model", help="a saved tagger version directory")
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--name", default="synthetic")
    parser.add_argument("--layers", type=int, default=DEFAULT_NUM_LAYERS)
    parser.add_argument("--train-messages", type=int, default=3000)
    parser.add_argument("--train-seconds", type=float, default=600)
    args = parser.parse_args(argv)
    try:
        counts = [int(w) for w in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers must be comma-separated whole numbers, not {args.workers!r}")
    data = Path(args.data)
    source = args.source or ("shared" if all((data / f).exists() for f in SHARED_FILES) else "synthetic")
    if source == "shared" and not all((data / f).exists() for f in SHARED_FILES):
        parser.error(f"--source shared needs {', '.join(SHARED_FILES)} in {data}")
    model = ensure_model(args)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        n_dialogues, n_messages = write_corpus(corpus, args.messages, source, data)
        print(f"corpus: {n_dialogues:,} dialogues, {n_messages:,} messages ({source}); model {model}")
        print(f"usable cores {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f} at start")
        rows = [run(corpus, Path(tmp) / f"w{w}", model, w) for w in counts]
    print(f"model version {rows[0]['model_version']}; {rows[0]['spans']:,} spans found")
    print(f"{'workers':>7} {'seconds':>8} {'msg/s':>7} {'spans s':>8} {'release s':>9} "
          f"{'115,620 msgs':>13} {'peak RSS MB':>12}")
    for r in rows:
        rate = r["messages"] / r["seconds"]
        r["projected"] = TARGET_MESSAGES / rate
        print(f"{r['workers']:>7} {r['seconds']:>8.1f} {rate:>7.0f} {r['passes']['spans']:>8.1f} "
              f"{r['passes']['release']:>9.1f} {r['projected'] / 60:>10.1f} min {r['rss_mb']:>12.0f}")
    identical = len({r["digest"] for r in rows}) == 1
    print(f"release, mapping, leak and utility files identical across worker counts: {identical}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end (the machine may be shared: figures are wall-clock)")
    ok = identical
    for r in rows:
        if r["workers"] == 2:
            fast = r["projected"] <= TARGET_SECONDS
            ok &= fast
            print(f"{'PASS' if fast else 'MISS'}  115,620 messages in <= 10 min on 2 workers: "
                  f"{r['projected'] / 60:.1f} min (projected from {r['messages']:,})")
        small = r["rss_mb"] <= TARGET_RSS_MB
        ok &= small
        print(f"{'PASS' if small else 'MISS'}  peak RSS <= 2.5 GB with {r['workers']} worker(s): {r['rss_mb']:,.0f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
