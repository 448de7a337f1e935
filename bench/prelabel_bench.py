"""Every offline pre-labelling detector side by side: speed, memory and the demo-gold evaluation.

    .venv/bin/python bench/prelabel_bench.py [--messages 20000] [--seed 2027]
                                             [--presidio-messages 10000] [--json OUT.json]

Each detector runs in its own fresh process (so peak RSS is its own, model included) over the
same synthetic corpus (``pipeline.synthetic``, seeded, at least ``--messages`` messages; the
generation is not timed), then over the demo gold (``annotator/demo/demo_corpus.jsonl``), which
it scores with :func:`pipeline.metrics.evaluation.evaluate`. ``math_segments`` runs first; its
MATH / NON-MATH labels of the demo gold feed the other detectors' FP:TP split.

Detectors: ``rules``, ``math_segments``, ``presidio`` vanilla and tuned, and ``tagger`` when a
trained model exists under ``var/models``. Presidio is ~50x slower than the rules, so it is timed
on the first ``--presidio-messages`` messages (10,000 by default, 0 for all) to keep the whole
run to a few minutes; its demo-gold evaluation is always complete.

Targets, printed as PASS / FAIL:

- rules + math_segments run in sequence at >= 2,000 messages/s;
- presidio tuned and rules each cut numeric false positives (predicted spans with a digit that
  overlap no gold span) by >= 90 % against presidio vanilla, with recall no lower. The recall
  compared is on *numeric gold PII* (gold spans that contain a digit: phones, ids, dates of
  birth, ages, addresses): the PII a numeric filter could lose. Overall token recall is printed
  too; for ``rules``, which does not look for names, it is lower by design.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import peak_rss_mb  # noqa: E402

DEMO = ROOT / "annotator" / "demo" / "demo_corpus.jsonl"
DEMO_SEED = 7  # the demo corpus's seed: the speed corpus uses another one
TARGET_FAST_MSG_S = 2000.0
TARGET_FP_CUT = 0.90

DETECTORS: list[tuple[str, str, dict[str, Any]]] = [
    ("math_segments", "math_segments", {}),
    ("segments density", "math_segments", {"embed": False}),
    ("rules", "rules", {}),
    ("presidio vanilla", "presidio", {"preset": "vanilla"}),
    ("presidio tuned", "presidio", {"preset": "tuned"}),
    ("tagger", "tagger", {}),
]


def _current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # pragma: no cover - not Linux
        return float("nan")


# --- worker: one detector in a fresh process ------------------------------------------------


def _speed_corpus(n_messages: int, seed: int):
    from pipeline.synthetic import generate_messages

    return generate_messages(n_messages, seed)


def _numeric_recall(texts, gold, pred) -> tuple[int, int]:
    """(found, total) gold spans containing a digit that some prediction overlaps (any label)."""
    found = total = 0
    for key, spans in gold.items():
        text = texts[key]
        for g in spans:
            if not any(c.isdigit() for c in text[g.start : g.end]):
                continue
            total += 1
            found += any(p.start < g.end and g.start < p.end for p in pred.get(key, ()))
    return found, total


def worker(args: argparse.Namespace) -> dict[str, Any]:
    from pipeline.formats import read_corpus
    from pipeline.metrics.evaluation import evaluate
    from pipeline.registry import build
    from pipeline.types import Span

    config = json.loads(args.config)
    corpus = _speed_corpus(args.messages, args.seed)
    if args.limit:
        kept, n = [], 0
        for d in corpus:
            if n >= args.limit:
                break
            kept.append(d)
            n += len(d.messages)
        corpus = kept
    n_messages = sum(len(d.messages) for d in corpus)
    rss_before = _current_rss_mb()
    detector = build(args.worker, config)

    # warm-up on a few dialogues (model and metadata loading are reported apart from throughput)
    started = time.perf_counter()
    list(detector.detect_many(corpus[:5]))
    load_s = time.perf_counter() - started

    started = time.perf_counter()
    n_spans = 0
    for dets in detector.detect_many(corpus):
        n_spans += sum(len(d.spans) for d in dets)
    seconds = time.perf_counter() - started

    demo = read_corpus(DEMO)
    texts = {(d.id, m.index): m.text for d in demo for m in d.messages}
    gold = {(d.id, m.index): list(m.spans) for d in demo for m in d.messages}
    pred: dict[tuple[str, int], list[Span]] = {}
    segments: dict[tuple[str, int], str] = {}
    for dets in detector.detect_many(demo):
        for det in dets:
            pred[(det.dialogue_id, det.index)] = list(det.spans)
            if det.segment is not None:
                segments[(det.dialogue_id, det.index)] = det.segment
    if args.segments_in and Path(args.segments_in).exists():
        raw = json.loads(Path(args.segments_in).read_text())
        segments = {(k.split("\t")[0], int(k.split("\t")[1])): v for k, v in raw.items()}
    if args.segments_out and segments:
        Path(args.segments_out).write_text(
            json.dumps({f"{k[0]}\t{k[1]}": v for k, v in segments.items()})
        )
    report = evaluate(texts=texts, gold=gold, pred=pred, segments=segments or None, n_boot=200)
    found, total = _numeric_recall(texts, gold, pred)
    amb = report.ambiguity
    seg = {k: v.to_dict() for k, v in (amb.segments or {}).items()}
    return {
        "model_version": detector.model_version,
        "messages": n_messages,
        "seconds": seconds,
        "load_seconds": load_s,
        "msg_per_s": n_messages / seconds if seconds else float("inf"),
        "spans_per_1000": 1000 * n_spans / max(n_messages, 1),
        "peak_rss_mb": peak_rss_mb(),
        "rss_before_mb": rss_before,
        "demo": {
            "token": report.token.to_dict(),
            "span_overlap_untyped": report.span_overlap_untyped.to_dict(),
            "fp": amb.fp,
            "tp": amb.tp,
            "numeric_fp": amb.numeric_fp,
            "numeric_fp_by_source": dict(amb.numeric_fp_by_source),
            "numeric_recall": found / total if total else None,
            "numeric_gold": total,
            "segments": seg,
            "numbers_removed_outside_gold": report.utility.number_tokens_removed_outside_gold_share,
        },
        "table": report.format_table() if args.table else "",
    }


# --- driver --------------------------------------------------------------------------------


def _run_worker(name: str, detector: str, config: dict, args, extra: list[str]) -> dict | None:
    cmd = [
        sys.executable, __file__, "--worker", detector, "--config", json.dumps(config),
        "--messages", str(args.messages), "--seed", str(args.seed), *extra,
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"  {name}: FAILED ({' | '.join(tail)})", flush=True)
        return None
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"  {name}: {result['messages']:,} messages in {result['seconds']:.1f}s "
        f"({result['msg_per_s']:,.0f}/s), peak RSS {result['peak_rss_mb']:.0f} MB "
        f"[process {time.perf_counter() - started:.0f}s]",
        flush=True,
    )
    return result


def _tagger_available() -> bool:
    try:
        from pipeline.registry import build

        build("tagger").info  # noqa: B018 - resolves the model without loading weights
        return True
    except Exception:
        return False


def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and x != x) else f"{x:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument(
        "--presidio-messages",
        type=int,
        default=10000,
        help="time Presidio on the first N messages only (default 10,000; 0: all)",
    )
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    parser.add_argument("--tables", action="store_true", help="print each full evaluation table")
    # worker mode (internal)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--config", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--segments-in", help=argparse.SUPPRESS)
    parser.add_argument("--segments-out", help=argparse.SUPPRESS)
    parser.add_argument("--table", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)  # fmt: skip

    if args.worker:
        print(json.dumps(worker(args)))
        return 0

    print(
        f"prelabel bench: synthetic corpus >= {args.messages:,} messages (seed {args.seed}), "
        f"demo gold {DEMO.relative_to(ROOT)}; cpus {os.cpu_count()}",
        flush=True,
    )
    results: dict[str, dict] = {}
    seg_file = ROOT / "var" / "bench_demo_segments.json"
    seg_file.parent.mkdir(parents=True, exist_ok=True)
    seg_file.unlink(missing_ok=True)
    for name, detector, config in DETECTORS:
        if detector == "tagger" and not _tagger_available():
            print("  tagger: skipped (no trained model under var/models)", flush=True)
            continue
        extra = ["--table"] if args.tables else []
        if name == "math_segments":
            extra += ["--segments-out", str(seg_file)]
        else:
            extra += ["--segments-in", str(seg_file)]
        if detector == "presidio" and args.presidio_messages:
            extra += ["--limit", str(args.presidio_messages)]
        result = _run_worker(name, detector, config, args, extra)
        if result is not None:
            results[name] = result
    seg_file.unlink(missing_ok=True)

    print()
    header = (
        f"{'detector':<18}{'msg/s':>9}{'RSS MB':>8}{'tokP':>7}{'tokR':>7}{'tokF2':>7}"
        f"{'numR':>7}{'FP':>6}{'numFP':>7}{'FP:TP MATH':>12}{'FP:TP NON':>11}"
    )
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        d, tok = r["demo"], r["demo"]["token"]
        seg = d["segments"]
        math_ratio = seg.get("MATH", {}).get("fp_per_tp")
        non_ratio = seg.get("NON-MATH", {}).get("fp_per_tp")
        print(
            f"{name:<18}{r['msg_per_s']:>9,.0f}{r['peak_rss_mb']:>8.0f}{_f(tok['precision']):>7}"
            f"{_f(tok['recall']):>7}{_f(tok['f2']):>7}{_f(d['numeric_recall']):>7}{d['fp']:>6}"
            f"{d['numeric_fp']:>7}{_f(math_ratio, 2):>12}{_f(non_ratio, 2):>11}"
        )
    print(
        "tokP/tokR/tokF2: token level, type-agnostic; numR: recall of numeric gold PII (gold spans "
        "with a digit); numFP: false positives containing a digit; FP:TP by math_segments' label."
    )
    if args.tables:
        for name, r in results.items():
            print(f"\n=== {name} ===\n{r['table']}")

    print("\nTargets")
    checks: list[tuple[str, bool]] = []
    if "rules" in results and "math_segments" in results:
        a, b = results["rules"]["msg_per_s"], results["math_segments"]["msg_per_s"]
        combined = 1 / (1 / a + 1 / b)
        checks.append((f"rules + math_segments >= {TARGET_FAST_MSG_S:,.0f} msg/s "
                       f"(measured {combined:,.0f}/s in sequence)", combined >= TARGET_FAST_MSG_S))  # fmt: skip
        if "segments density" in results:
            c = results["segments density"]["msg_per_s"]
            print(f"  (information: rules + math_segments without embeddings "
                  f"{1 / (1 / a + 1 / c):,.0f}/s)")  # fmt: skip
    vanilla = results.get("presidio vanilla")
    for name in ("presidio tuned", "rules"):
        if vanilla is None or name not in results:
            continue
        v, r = vanilla["demo"], results[name]["demo"]
        cut = 1 - r["numeric_fp"] / v["numeric_fp"] if v["numeric_fp"] else float("nan")
        recall_ok = (r["numeric_recall"] or 0) >= (v["numeric_recall"] or 0)
        checks.append((
            f"{name}: numeric FP {v['numeric_fp']} -> {r['numeric_fp']} (cut {cut:.1%} >= 90%), "
            f"numeric-PII recall {_f(v['numeric_recall'])} -> {_f(r['numeric_recall'])} (no lower); "
            f"token recall {_f(v['token']['recall'])} -> {_f(r['token']['recall'])}",
            cut >= TARGET_FP_CUT and recall_ok,
        ))  # fmt: skip
    for text, ok in checks:
        print(f"  [{'PASS' if ok else 'FAIL'}] {text}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "checks": checks}, indent=1))
    return 0 if checks and all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
