"""Benchmark the ``tagger`` detector against Presidio vanilla, on the same machine in the same run.

    .venv/bin/python bench/tagger_bench.py [--model PATH | --model-dir var/models --name synthetic]
                                           [--data ../shared/data] [--dev-limit 400]

Prints, for the tagger (both policies) and for ``presidio`` ``{"preset": "vanilla"}``:

- throughput in messages/s over the same dev-set messages (context window included), best of
  ``--repeat`` interleaved passes, wall-clock and per CPU-second (all threads);
- on the dev set built from the real tutoring text (``pipeline.devset``; names inserted where
  the text had placeholders): name recall and the share of number tokens removed;
- on the demo gold (``annotator/demo/demo_corpus.jsonl``): micro F2 over all labels (exact span,
  overlapping span, token) and numeric false positives per 1,000 messages;
- peak RSS of a fresh process that loads the detector and runs it over the dev set.

When no trained model exists it first trains one on the synthetic generator with a seed other
than the demo corpus's (a few minutes). The real data is read only here, never written.

``--student`` adds the same rows for a student distilled from that model (``--student PATH``, or
the newest under ``<name>-student<N>``, distilled on the same generated messages when none
exists), and prints how far each of its quality figures is from the teacher's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.formats import read_corpus  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.tagger.training.config import DEFAULT_NUM_LAYERS, STUDENT_DEFAULTS  # noqa: E402
from pipeline.text import tokenize  # noqa: E402
from pipeline.types import Dialogue, Span  # noqa: E402

DEMO = ROOT / "annotator" / "demo" / "demo_corpus.jsonl"
DEMO_SEED = 7  # pipeline/synthetic/__main__.py DEMO_ARGS: never train on it
TRAIN_SEED = 2026
VARIANTS = {  # detector settings of the runtimes --variants compares
    "torch-fp32": {"backend": "torch", "precision": "fp32"},
    "torch-int8": {"backend": "torch", "precision": "int8"},
    "torch-bf16": {"backend": "torch", "precision": "bf16"},
    "onnx-fp32": {"backend": "onnx", "precision": "fp32"},
    "onnx-int8": {"backend": "onnx", "precision": "int8"},
}
TARGETS = {
    "speedup": 4.0,
    "name_recall": 0.95,
    "numbers_removed": 0.005,
    "demo_f2": 0.90,
    "numeric_fp_per_1k": 1.0,
    "rss_mb": 1536,
}
QUALITY_TOLERANCE = 0.01  # a faster model may lose at most this much of any figure


# --- metrics ---------------------------------------------------------------------------------


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def _f(tp: float, fp: float, fn: float, beta: float = 2.0) -> float:
    b2 = beta * beta
    d = (1 + b2) * tp + b2 * fn + fp
    return (1 + b2) * tp / d if d else 0.0


def gold_scores(dialogues: Sequence[Dialogue], predicted: Sequence[Sequence[Sequence[Span]]]) -> dict:
    """Micro P/R/F2 at three levels, and numeric false positives (digits, no gold overlap)."""
    c = {lvl: [0, 0, 0] for lvl in ("exact", "overlap", "token")}
    numeric_fp = messages = 0
    for d, preds in zip(dialogues, predicted, strict=True):
        for m, pred in zip(d.messages, preds, strict=True):
            messages += 1
            gold = list(m.spans)
            gk, pk = {s.key() for s in gold}, {s.key() for s in pred}
            c["exact"][0] += len(gk & pk)
            c["exact"][1] += len(pk - gk)
            c["exact"][2] += len(gk - pk)
            used: set[int] = set()
            for p in pred:
                hit = next(
                    (i for i, g in enumerate(gold) if i not in used and g.label == p.label and _overlaps(g, p)),
                    None,
                )
                if hit is None:
                    c["overlap"][1] += 1
                else:
                    used.add(hit)
                    c["overlap"][0] += 1
            c["overlap"][2] += len(gold) - len(used)
            for tok in tokenize(m.text):
                g = next((s.label for s in gold if s.start < tok.end and tok.start < s.end), None)
                q = next((s.label for s in pred if s.start < tok.end and tok.start < s.end), None)
                if g and q == g:
                    c["token"][0] += 1
                else:
                    c["token"][1] += q is not None
                    c["token"][2] += g is not None
            for p in pred:
                if any(ch.isdigit() for ch in m.text[p.start : p.end]) and not any(
                    _overlaps(p, g) for g in gold
                ):
                    numeric_fp += 1
    out = {}
    for lvl, (tp, fp, fn) in c.items():
        out[lvl] = {
            "precision": tp / (tp + fp) if tp + fp else 0.0,
            "recall": tp / (tp + fn) if tp + fn else 0.0,
            "f2": _f(tp, fp, fn),
        }
    out["numeric_fp_per_1k"] = 1000 * numeric_fp / max(1, messages)
    out["numeric_fp"] = numeric_fp
    out["messages"] = messages
    return out


def dev_scores(dialogues: Sequence[Dialogue], predicted: Sequence[Sequence[Sequence[Span]]]) -> dict:
    """Name recall (a gold name overlapped by any predicted span; and by a NAME span) and the
    share of number tokens (all teaching content here) that a prediction covers."""
    names = found_any = found_name = numbers = removed = 0
    for d, preds in zip(dialogues, predicted, strict=True):
        for m, pred in zip(d.messages, preds, strict=True):
            for g in m.spans:
                if g.label != "NAME":
                    continue
                names += 1
                found_any += any(_overlaps(g, p) for p in pred)
                found_name += any(_overlaps(g, p) and p.label == "NAME" for p in pred)
            for tok in tokenize(m.text):
                if tok.is_number:
                    numbers += 1
                    removed += any(p.start < tok.end and tok.start < p.end for p in pred)
    return {
        "names": names,
        "name_recall": found_any / names if names else float("nan"),
        "name_recall_as_name": found_name / names if names else float("nan"),
        "number_tokens": numbers,
        "numbers_removed": removed / numbers if numbers else 0.0,
    }


def run(detector, dialogues: Sequence[Dialogue]) -> tuple[list[list[list[Span]]], float, float]:
    """Spans per message per dialogue, wall seconds and CPU seconds (all threads)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = [[list(det.spans) for det in dets] for dets in detector.detect_many(dialogues)]
    return out, time.perf_counter() - t0, time.process_time() - c0


# --- model -----------------------------------------------------------------------------------


def ensure_model(args) -> str:
    from pipeline.tagger import TrainConfig, list_models, train_tagger

    if args.model:
        return args.model
    name = args.name if args.layers == DEFAULT_NUM_LAYERS else f"{args.name}-{args.layers}layers"
    mine = list_models(args.model_dir, name)  # the bench's own model, under its own name
    info = mine[-1] if mine else None
    if info is not None:
        if not info.onnx.get("int8", {}).get("verified"):  # trained before the ONNX step
            from pipeline.tagger.onnx_export import export_onnx

            print(f"exporting {info.full_version} to ONNX …", flush=True)
            export_onnx(info.path)
        return info.path
    from pipeline.synthetic import generate_messages

    print(f"no model under {args.model_dir}/{name}: training one (seed {TRAIN_SEED}) …", flush=True)
    train = generate_messages(args.train_messages, seed=TRAIN_SEED)
    info = train_tagger(TrainConfig(
        train, name=name, out_dir=args.model_dir, num_layers=args.layers, max_seconds=args.train_seconds
    ))
    print(f"trained {info.full_version} in {info.training_seconds:.0f}s", flush=True)
    return info.path


def ensure_student(args, teacher: str) -> str:
    """The distilled student: ``--student PATH``, else the newest of ``teacher``'s students under
    ``<name>-student<N>[-w<max_length>]`` checked on the teacher's dev dialogues, else one
    distilled now on the teacher's training messages (``--student-layers``,
    ``--student-max-length``). The same ``--train-messages`` give the same dialogue ids
    (``synth-2026-<i>``), so the student's dev is the teacher's; a teacher trained on other data
    is refused by ``train_tagger`` (``TeacherDevError``)."""
    from pipeline.synthetic import generate_messages
    from pipeline.tagger import TrainConfig, WindowConfig, list_models, read_info, train_tagger

    if args.student != "auto":
        return args.student
    layers = [int(k) for k in args.student_layers.split(",")] if args.student_layers else None
    n = len(layers) if layers else STUDENT_DEFAULTS["num_layers"]
    name = f"{args.name}-student{n}" + (f"-w{args.student_max_length}" if args.student_max_length else "")
    name += f"-l{''.join(map(str, layers))}" if layers else ""
    teacher_version = read_info(teacher).full_version
    mine = [
        i for i in list_models(args.model_dir, name)
        if i.distilled_from == teacher_version
        and (i.hyper["distillation"].get("check") or {}).get("dev") == "teacher"
    ]
    if mine:
        return mine[-1].path
    window = WindowConfig.from_dict(read_info(teacher).window)
    if args.student_max_length:
        window = WindowConfig.from_dict({**window.to_dict(), "max_length": args.student_max_length})
    print(f"distilling {teacher_version} into {name} …", flush=True)
    info = train_tagger(TrainConfig(
        generate_messages(args.train_messages, seed=TRAIN_SEED), name=name, out_dir=args.model_dir,
        teacher=teacher, **{**STUDENT_DEFAULTS, "num_layers": n}, student_layers=layers, window=window,
        max_seconds=args.train_seconds,
    ))
    print(f"distilled {info.full_version} in {info.training_seconds:.0f}s", flush=True)
    return info.path


def rss_probe(kind: str, model: str, data: str, limit: int) -> None:
    """Child process: load one detector, run it over the dev set, print peak RSS in MB."""
    from pipeline.devset import build_devset

    dialogues = build_devset(Path(data), limit=limit)
    det = build("tagger", {"model_path": model}) if kind == "tagger" else build(
        "presidio", {"preset": "vanilla"}
    )
    for _ in det.detect_many(dialogues):
        pass
    print(json.dumps({"rss_mb": _peak_rss_mb()}))


def _peak_rss_mb() -> float:
    """This process's peak RSS. ``VmHWM`` belongs to the address space, so unlike ``ru_maxrss``
    it does not inherit the high-water mark of the (large) parent that spawned the probe."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss(kind: str, model: str, data: str, limit: int) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "--rss-probe", kind, "--model", model, "--data", data,
         "--dev-limit", str(limit)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["rss_mb"]


def print_held_quality(rows: dict) -> None:
    """Each student row against the teacher's row of the same policy and runtime: the quality
    figures may move by at most ``QUALITY_TOLERANCE`` (the numeric FP count per 1,000 messages is
    compared as a share, per message)."""
    print(f"\nstudent vs teacher (quality within {QUALITY_TOLERANCE} of the teacher's):")
    for label in [k for k in rows if k.startswith("student ")]:
        rest = label.removeprefix("student ")  # the teacher's rows: "tagger strict", "recall_first onnx-int8"
        teacher = rows[rest if rest.startswith("recall_first ") else f"tagger {rest}"]
        student = rows[label]
        figures = {
            "name recall": (student["name_recall"], teacher["name_recall"], +1),
            "numbers removed": (student["numbers_removed"], teacher["numbers_removed"], -1),
            "demo F2 token": (student["demo"]["token"]["f2"], teacher["demo"]["token"]["f2"], +1),
            "numeric FP per msg": (student["demo"]["numeric_fp_per_1k"] / 1000,
                                   teacher["demo"]["numeric_fp_per_1k"] / 1000, -1),
        }
        speed = student["msgs_per_s"] / rows["presidio vanilla"]["msgs_per_s"]
        parts = [f"{speed:.2f}x presidio {'ok' if speed >= TARGETS['speedup'] else 'MISS'}"]
        for what, (s, t, better) in figures.items():
            held = (s - t) * better >= -QUALITY_TOLERANCE
            parts.append(f"{what} {s:.4f} ({s - t:+.4f}) {'ok' if held else 'MISS'}")
        print(f"{label}: " + ", ".join(parts))


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a saved model version directory")
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--name", default="synthetic")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--dev-limit", type=int, default=600, help="dialogues of the dev set")
    parser.add_argument("--train-messages", type=int, default=3000)
    parser.add_argument("--layers", type=int, default=DEFAULT_NUM_LAYERS,
                        help="encoder layers of a model it trains")
    parser.add_argument("--train-seconds", type=float, default=600)
    parser.add_argument("--repeat", type=int, default=5, help="throughput: best of N passes")
    parser.add_argument("--no-rss", action="store_true")
    parser.add_argument("--variants", default="torch-int8,onnx-fp32,onnx-int8",
                        help=f"recall_first runtimes to compare besides the default: {', '.join(VARIANTS)}")
    parser.add_argument("--student", nargs="?", const="auto",
                        help="also bench a student distilled from the model: a version directory, "
                             "or (no value) the newest one, distilled first when none exists")
    parser.add_argument("--student-layers", default="",
                        help="teacher layers a new student keeps, e.g. 0,2 (default: 2, spread)")
    parser.add_argument("--student-max-length", type=int, default=0,
                        help="window max_length of a new student (default: the teacher's)")
    parser.add_argument("--rss-probe", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_probe:
        rss_probe(args.rss_probe, args.model, args.data, args.dev_limit)
        return 0

    from pipeline.devset import build_devset

    model = ensure_model(args)
    models = {"tagger": model, **({"student": ensure_student(args, model)} if args.student else {})}
    dev = build_devset(Path(args.data), limit=args.dev_limit)
    demo = read_corpus(DEMO)
    n_dev = sum(len(d.messages) for d in dev)
    n_demo = sum(len(d.messages) for d in demo)
    print("".join(f"{who} {path}\n" for who, path in models.items())
          + f"dev set: {len(dev)} dialogues, {n_dev} messages; demo gold: {len(demo)} dialogues, {n_demo} messages; threads {os.cpu_count()}")

    rows = {}
    detectors = {"presidio vanilla": build("presidio", {"preset": "vanilla"})}
    for who, path in models.items():
        detectors[f"{who} strict"] = build("tagger", {"model_path": path, "policy": "strict"})
        detectors[f"{who} recall_first"] = build("tagger", {"model_path": path, "policy": "recall_first"})
        for variant in filter(None, args.variants.split(",")):
            prefix = "" if who == "tagger" else f"{who} "
            detectors[f"{prefix}recall_first {variant}"] = build(
                "tagger", {"model_path": path, "policy": "recall_first", **VARIANTS[variant]}
            )
    for label, det in detectors.items():
        run(det, dev[:5])  # warm up: load models, caches
        dev_pred, _, _ = run(det, dev)
        demo_pred, _, _ = run(det, demo)
        rows[label] = {
            **dev_scores(dev, dev_pred),
            "demo": gold_scores(demo, demo_pred),
            "version": det.model_version,
        }
    # Throughput: passes interleaved (presidio, tagger, tagger, presidio, …) and the best of
    # ``--repeat`` kept, so a slow spell of this shared machine hits every detector alike.
    passes: dict[str, list[tuple[float, float]]] = {label: [] for label in detectors}
    for _ in range(args.repeat):
        for label, det in detectors.items():
            _, secs, cpu = run(det, dev)
            passes[label].append((secs, cpu))
    for label, timings in passes.items():
        secs, cpu = min(t for t, _ in timings), min(c for _, c in timings)
        rows[label] |= {
            "msgs_per_s": n_dev / secs,
            "msgs_per_cpu_s": n_dev / cpu,
            "msgs_per_s_passes": [round(n_dev / t) for t, _ in timings],
        }
        print(f"  {label}: {rows[label]['msgs_per_s']:.0f} msgs/s wall (passes: "
              f"{', '.join(map(str, rows[label]['msgs_per_s_passes']))}), "
              f"{rows[label]['msgs_per_cpu_s']:.0f} msgs per CPU-second", flush=True)
    if not args.no_rss:
        rows["presidio vanilla"]["rss_mb"] = peak_rss("presidio", model, args.data, args.dev_limit)
        for who, path in models.items():
            rss = peak_rss("tagger", path, args.data, args.dev_limit)
            rows[f"{who} strict"]["rss_mb"] = rows[f"{who} recall_first"]["rss_mb"] = rss

    base = rows["presidio vanilla"]["msgs_per_s"]
    base_cpu = rows["presidio vanilla"]["msgs_per_cpu_s"]
    print()
    header = f"{'':24}{'msgs/s':>9}{'x pres.':>9}{'x cpu':>7}{'name R':>8}{'num rm':>8}{'F2 exact':>9}" \
             f"{'F2 ovl':>8}{'F2 tok':>8}{'numFP/1k':>9}{'RSS MB':>8}"
    print(header)
    for label, r in rows.items():
        d = r["demo"]
        print(f"{label:24}{r['msgs_per_s']:9.0f}{r['msgs_per_s'] / base:9.2f}"
              f"{r['msgs_per_cpu_s'] / base_cpu:7.2f}{r['name_recall']:8.3f}"
              f"{100 * r['numbers_removed']:7.2f}%{d['exact']['f2']:9.3f}{d['overlap']['f2']:8.3f}"
              f"{d['token']['f2']:8.3f}{d['numeric_fp_per_1k']:9.2f}{r.get('rss_mb', float('nan')):8.0f}")
    print("(x pres.: wall-clock ratio; x cpu: ratio of messages per CPU-second, all threads —"
          " the fairer figure on a shared machine)")
    print("\ntargets: throughput >= 4x presidio vanilla; dev name recall >= 0.95; number tokens "
          "removed <= 0.5%; demo F2 >= 0.90; numeric FP <= 1 per 1,000 messages; RSS <= 1.5 GB")
    for label in [k for k in rows if k != "presidio vanilla"]:
        r = rows[label]
        checks = {
            "throughput": r["msgs_per_s"] / base >= TARGETS["speedup"],
            "name recall": r["name_recall"] >= TARGETS["name_recall"],
            "numbers removed": r["numbers_removed"] <= TARGETS["numbers_removed"],
            "demo F2 (token)": r["demo"]["token"]["f2"] >= TARGETS["demo_f2"],
            "demo F2 (overlap)": r["demo"]["overlap"]["f2"] >= TARGETS["demo_f2"],
            "numeric FP": r["demo"]["numeric_fp_per_1k"] <= TARGETS["numeric_fp_per_1k"],
            "RSS": r.get("rss_mb", 0) <= TARGETS["rss_mb"],
        }
        print(f"{label}: " + ", ".join(f"{k} {'ok' if v else 'MISS'}" for k, v in checks.items()))
    if "student" in models:
        print_held_quality(rows)
    print("\n" + json.dumps(rows, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
