"""The tagger against Presidio vanilla as the user runs them: ``manage.py detect``, same run, same input.

    nice -n 10 .venv/bin/python bench/detect_speed_bench.py --model PATH [--config '{"backend": "onnx"}']
                                                             [--data ../shared/data] [--min-messages 30000]
                                                             [--workers 2] [--repeat 1] [--warm 3000]

The input is the files of ``--data`` as they are (every dialogue, ids made unique per copy), repeated
until it holds ``--min-messages`` messages, written to a temporary file (never into the project).
For the tagger (``model_path`` = ``--model`` plus ``--config``) and ``presidio {"preset": "vanilla",
"reuse": false}`` (every text analysed: the input repeats the data, which the reuse would skip),
interleaved, it prints the tagger's runtime (``backend: auto`` is measured once per machine before the
timed commands, with a worker's threads, and the reason printed) and, side by side:

- whole command: ``manage.py detect`` in a child process with ``--workers`` for both, wall-clock
  msg/s and msg per CPU-second of the child and its workers (start-up, model load, JSON included);
- warm: in this process, after a warm-up, over the first ``--warm`` messages, with
  ``--warm-threads`` inference threads (default 1, a worker's share): wall and per CPU-second;
- name recall of the tagger on the dev set built from the same real text (``pipeline.devset``).

The machine's load average is printed before and after: on a shared machine wall-clock figures swing
with the other tenants, and the per-CPU-second figures are the ones to compare.
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
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.formats.native import iter_jsonl_dialogues  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.types import Dialogue  # noqa: E402

FILES = ("bridge.jsonl", "ncte_uptake.jsonl")
# Presidio analyses every text: its reuse of texts seen lately would count each of the input's four
# copies once (the input repeats the data 4x), which no real corpus does
PRESIDIO = ("presidio", {"preset": "vanilla", "reuse": False})


def runtime(config: dict, workers: int) -> str:
    """The tagger's runtime and why. ``backend: auto`` is measured here, with a detect worker's
    threads, before any timed command: once per machine, then read from its cache by the workers."""
    from pipeline.parallel import threads_per_worker
    from pipeline.tagger.backends import cached_choice

    before = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(threads_per_worker(workers))
    try:
        det = build("tagger", config)
        backend, precision = det.runtime
        chosen = cached_choice(det.info)
    finally:
        os.environ["OMP_NUM_THREADS"] = before or ""
    return f"{backend}-{precision}" + (f" ({chosen['reason']})" if chosen else " (asked for)")


def build_input(data: Path, min_messages: int, out: Path) -> int:
    """Write the data files, copied as often as needed, with unique ids; returns the message count."""
    rows = []
    for name in FILES:
        with open(data / name, encoding="utf-8") as fh:
            rows.extend((name, i, json.loads(line)) for i, line in enumerate(fh) if line.strip())
    per_copy = sum(len(r["messages"]) for _, _, r in rows)
    copies = max(1, -(-min_messages // per_copy))
    with open(out, "w", encoding="utf-8") as fh:
        for c in range(copies):
            for name, i, row in rows:
                fh.write(json.dumps({**row, "id": f"c{c}-{Path(name).stem}-{i}"}) + "\n")
    return per_copy * copies


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def whole_command(detector: str, config: dict, corpus: Path, workers: int, out: Path) -> tuple[float, float]:
    """``manage.py detect`` timed: (wall seconds, CPU seconds of the child and its workers)."""
    cmd = [sys.executable, str(ROOT / "manage.py"), "detect", str(corpus), "--detector", detector,
           "--config", json.dumps(config), "--out", str(out), "--workers", str(workers)]
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0, _children_cpu() - c0


def warm(detector, dialogues: Sequence[Dialogue]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one pass after a warm-up."""
    list(detector.detect_many(dialogues[:20]))
    c0, t0 = _self_cpu(), time.perf_counter()
    for _ in detector.detect_many(dialogues):
        pass
    return time.perf_counter() - t0, _self_cpu() - c0


def name_recall(detector, data: Path) -> float:
    from bench.tagger_bench import dev_scores
    from pipeline.devset import build_devset

    dev = build_devset(data)
    predicted = [[list(d.spans) for d in found] for found in detector.detect_many(dev)]
    return dev_scores(dev, predicted)["name_recall"]


def _first(dialogues, n: int) -> list[Dialogue]:
    out, size = [], 0
    for d in dialogues:
        if size >= n:
            break
        out.append(d)
        size += len(d.messages)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a saved tagger version directory")
    ap.add_argument("--config", default="{}", help="more tagger config, JSON (backend, precision)")
    ap.add_argument("--presidio-config", default="{}",
                    help='more Presidio config, JSON: {"fast": false} is Presidio as shipped (parser, every phone matcher)')
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--min-messages", type=int, default=30000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--warm", type=int, default=3000, help="messages of the warm in-process pass")
    ap.add_argument("--warm-threads", type=int, default=1,
                    help="inference threads of the warm pass (1: a detect worker's share with 2 workers on 2 cores)")
    ap.add_argument("--no-recall", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    os.environ["OMP_NUM_THREADS"] = str(args.warm_threads)  # this process only: detect sets its workers' own
    tagger = ("tagger", {"model_path": args.model, **json.loads(args.config)})
    presidio = (PRESIDIO[0], {**PRESIDIO[1], **json.loads(args.presidio_config)})
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    print(f"tagger runtime: {runtime(tagger[1], args.workers)}")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "input.jsonl"
        n = build_input(Path(args.data), args.min_messages, corpus)
        print(f"input: {n:,} messages; detect --workers {args.workers}; {args.repeat} interleaved pass(es)")
        cmd: dict[str, list[tuple[float, float]]] = {"tagger": [], "presidio": []}
        for _ in range(args.repeat):
            for name, config in (tagger, presidio):
                cmd[name].append(whole_command(name, config, corpus, args.workers, Path(tmp) / "out.jsonl"))
        with open(corpus, encoding="utf-8") as fh:
            sample = _first(iter_jsonl_dialogues(fh), args.warm)
    m = sum(len(d.messages) for d in sample)
    dets = {name: build(name, config) for name, config in (tagger, presidio)}
    hot = {name: warm(det, sample) for name, det in dets.items()}
    print(f"tagger: {dets['tagger'].model_version}; presidio: {presidio[1]}")
    _table(n, m, cmd, hot)
    if not args.no_recall:
        print(f"tagger dev-set name recall: {name_recall(dets['tagger'], Path(args.data)):.4f}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def _table(n: int, m: int, cmd: dict, hot: dict) -> None:
    def rates(name):
        wall = n / min(w for w, _ in cmd[name])
        cpu = n / min(c for _, c in cmd[name])
        hw, hc = hot[name]
        return wall, cpu, m / hw, m / hc

    t, p = rates("tagger"), rates("presidio")
    heads = ("command msg/s", "command msg/CPU-s", f"warm msg/s ({m:,})", "warm msg/CPU-s")
    print(f"| | {' | '.join(heads)} |")
    print("|---|" + "---:|" * len(heads))
    for label, r in (("tagger", t), ("presidio vanilla", p)):
        print(f"| {label} | " + " | ".join(f"{x:,.0f}" for x in r) + " |")
    print("| **× Presidio** | " + " | ".join(f"**{a / b:.2f}×**" for a, b in zip(t, p, strict=True)) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
