"""Which thresholds should a student keep? Saved students re-scored under other threshold rules,
with no retraining.

    nice -n 10 .venv/bin/python bench/student_thresholds_bench.py --teacher PATH STUDENT [STUDENT ...]
        [--data ../shared/data] [--dev-limit 0]

For each student (a version distilled from ``--teacher`` on the demo's data, e.g. those
``student_seeds_bench.py --out DIR`` keeps) and each threshold rule below, prints the student's
check against its teacher at those thresholds (dev F2 and recall on the teacher's dev dialogues,
raw fp32 output, within ``DISTILL_TOLERANCE`` of the teacher's tuned figures, as
``distillation.teacher_check`` scores them) and its name recall on the real-text dev set
(``pipeline.devset``, the detector as the bench runs it, post-filter on) against the teacher's.
The models run once each; only the thresholds change.

Rules: ``own`` (tuned on the teacher's dev dialogues, as saved), ``teacher`` (the teacher's
thresholds), ``gold100`` (tuned on all 100 dialogues' gold), ``imitate`` (tuned on all 100
dialogues with the teacher's predicted spans as the target), ``flat`` (the lowest threshold within
0.01 F2 of the best on dev), ``rate`` (per label, the threshold at which the student flags as many
words of the 100 dialogues as the teacher does at its own), ``min`` (per label, the lower of the
student's own and the teacher's), ``min_imitate`` (the lower of ``own`` and ``imitate``), ``min3``
(the lowest of ``own``, ``teacher`` and ``imitate``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.student_seeds_bench import teacher_data  # noqa: E402
from bench.tagger_bench import dev_scores  # noqa: E402


def detector_probs(path: str, dialogues):
    """The detector's model (as the bench runs it) and its probabilities, chunked as it chunks."""
    from pipeline.detectors.tagger import CHUNK_MESSAGES
    from pipeline.parallel import chunked
    from pipeline.registry import build

    det = build("tagger", {"model_path": path, "policy": "recall_first"})
    model = det.model
    probs: list = []
    for batch in chunked(dialogues, CHUNK_MESSAGES):
        probs.extend(model.predict(batch, batch_size=det.config["batch_size"]))
    return model, probs


def real_recall(model, dialogues, probs, thresholds) -> float:
    from pipeline.tagger.postfilter import filter_dialogue

    predicted = []
    for d, dp in zip(dialogues, probs, strict=True):
        spans = [model.to_spans(m.text, mp, thresholds) for m, mp in zip(d.messages, dp, strict=True)]
        predicted.append(filter_dialogue(d, spans, policy="recall_first"))
    return dev_scores(dialogues, predicted)["name_recall"]


def raw_spans(model, dialogues, probs, thresholds):
    return [[model.to_spans(m.text, mp, thresholds) for m, mp in zip(d.messages, dp, strict=True)]
            for d, dp in zip(dialogues, probs, strict=True)]


def span_score(model, dialogues, probs, thresholds, beta=2.0) -> dict:
    from pipeline.tagger.scoring import span_scores

    known = set(model.label_map.labels)
    gold = [[s for s in m.spans if s.label in known] for d in dialogues for m in d.messages]
    pred = [s for ds in raw_spans(model, dialogues, probs, thresholds) for s in ds]
    return span_scores(gold, pred, beta=beta)


def flat_words(model, dialogues, probs, targets=None):
    """(words, target spans, entity probs) per message; targets default to the gold spans."""
    labels = set(model.label_map.labels)
    words, gold, ent = [], [], []
    for j, (d, dp) in enumerate(zip(dialogues, probs, strict=True)):
        for i, (m, mp) in enumerate(zip(d.messages, dp, strict=True)):
            words.append(mp.words)
            spans = targets[j][i] if targets is not None else m.spans
            gold.append([s for s in spans if s.label in labels])
            ent.append(model.entity_probs(mp.probs)[0])
    return words, gold, ent


def flat_rule(words, gold, ent, labels, margin=0.01, beta=2.0, min_support=5):
    """Per label, the lowest grid threshold whose F-beta is within ``margin`` of the best."""
    from pipeline.tagger.scoring import GRID, tune_thresholds

    tuned, report = tune_thresholds(words, gold, ent, labels, beta=beta, min_support=min_support)
    out = dict(tuned)
    for lab in labels:
        if report[lab]["f"] is None:
            continue
        best = report[lab]["f"]
        for t in GRID:
            th, rep = _single(words, gold, ent, labels, lab, t, beta)
            if rep >= best - margin:
                out[lab] = t
                break
    return out


def _single(words, gold, ent, labels, lab, t, beta):
    from pipeline.tagger.scoring import f_beta
    from pipeline.tags import word_labels

    k = labels.index(lab)
    tp = fp = fn = 0
    for ws, spans, e in zip(words, gold, ent, strict=True):
        if not len(ws):
            continue
        g = np.array([lb == lab for lb, _ in word_labels(ws, spans)])
        pred = (e.argmax(axis=1) == k) & (e.max(axis=1) >= t)
        tp += int((pred & g).sum())
        fp += int((pred & ~g).sum())
        fn += int((~pred & g).sum())
    return t, f_beta(tp, fp, fn, beta)


def rate_rule(s_ent, t_ent, labels, t_thresholds, s_default):
    """Per label, the grid threshold at which the student flags as many words as the teacher."""
    from pipeline.tagger.scoring import GRID

    s = np.concatenate([e for e in s_ent if len(e)])
    t = np.concatenate([e for e in t_ent if len(e)])
    out = dict(s_default)
    for k, lab in enumerate(labels):
        want = int(((t.argmax(1) == k) & (t.max(1) >= t_thresholds[lab])).sum())
        if want < 5:
            continue
        counts = [(abs(int(((s.argmax(1) == k) & (s.max(1) >= g)).sum()) - want), -g, g) for g in GRID]
        out[lab] = min(counts)[2]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("students", nargs="+")
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--dev-limit", type=int, default=0)
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args(argv)

    from pipeline.devset import build_devset
    from pipeline.tagger import load_model, read_info
    from pipeline.tagger.scoring import tune_thresholds
    from pipeline.tagger.training.config import DISTILL_TOLERANCE
    from pipeline.tagger.training.distillation import imitation_thresholds, student_thresholds

    real = build_devset(Path(args.data), limit=args.dev_limit or None)
    tinfo = read_info(args.teacher)
    labels = tuple(tinfo.labels)
    data = teacher_data()
    ids = set(tinfo.dev_ids)
    dev = [d for d in data if d.id in ids]
    train = [d for d in data if d.id not in ids]
    every = dev + train

    tdet, treal = detector_probs(tinfo.path, real)
    teacher_real = real_recall(tdet, real, treal, tinfo.thresholds)
    tmodel = load_model(tinfo.path, precision="fp32")
    t_every = tmodel.predict(every)
    t_dev = t_every[: len(dev)]
    tcheck = span_score(tmodel, dev, t_dev, tinfo.thresholds)
    print(f"teacher {tinfo.full_version}: dev F2 {tcheck['f2']:.4f} recall {tcheck['recall']:.4f}; "
          f"real-text name recall {teacher_real:.4f} ({len(real)} dialogues)", flush=True)
    _, _, t_ent = flat_words(tmodel, every, t_every)

    rows = []
    for path in args.students:
        sinfo = read_info(path)
        smodel = load_model(sinfo.path, precision="fp32")
        s_every = smodel.predict(every)
        s_dev = s_every[: len(dev)]
        sdet, sreal = detector_probs(sinfo.path, real)
        w_dev, g_dev, e_dev = flat_words(smodel, dev, s_dev)
        w_all, g_all, e_all = flat_words(smodel, every, s_every)
        rules = {
            "own": dict(sinfo.thresholds),
            "teacher": dict(tinfo.thresholds),
            "gold100": tune_thresholds(w_all, g_all, e_all, labels, beta=2.0)[0],
            "imitate": imitation_thresholds(smodel, tmodel, tinfo.thresholds, every, labels, 2.0)[0],
            "flat": flat_rule(w_dev, g_dev, e_dev, labels),
            "rate": rate_rule(e_all, t_ent, labels, tinfo.thresholds, sinfo.thresholds),
            "min": {lab: min(sinfo.thresholds[lab], tinfo.thresholds[lab]) for lab in labels},
        }
        # what training now keeps (distill_thresholds="imitate"), by the training code itself
        rules["min_imitate"] = student_thresholds(rules["own"], tinfo.thresholds, "imitate", rules["imitate"])[0]
        rules["min3"] = {lab: min(rules["min"][lab], rules["imitate"][lab]) for lab in labels}
        for rule, thr in rules.items():
            sc = span_score(smodel, dev, s_dev, thr)
            passed = (sc["f2"] >= tcheck["f2"] - DISTILL_TOLERANCE - 1e-9
                      and sc["recall"] >= tcheck["recall"] - DISTILL_TOLERANCE - 1e-9)
            rec = real_recall(sdet, real, sreal, thr)
            row = {"student": sinfo.full_version, "seed": sinfo.hyper.get("seed"), "rule": rule,
                   "name_threshold": thr["NAME"], "dev_f2": sc["f2"], "dev_recall": sc["recall"],
                   "passed": passed, "name_recall": round(rec, 4), "name_gap": round(rec - teacher_real, 4)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    for rule in dict.fromkeys(r["rule"] for r in rows):
        mine = [r for r in rows if r["rule"] == rule]
        ok = sum(r["passed"] for r in mine)
        close = sum(r["name_gap"] >= -0.01 - 1e-9 for r in mine)
        gaps = " / ".join(f"{r['name_gap']:+.3f}" for r in mine)
        print(f"{rule:8s} check {ok}/{len(mine)}  name within 0.01 {close}/{len(mine)}  gaps {gaps}")
    if args.json:
        Path(args.json).write_text(json.dumps({"teacher_real": teacher_real, "teacher_dev": tcheck, "rows": rows},
                                              indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
