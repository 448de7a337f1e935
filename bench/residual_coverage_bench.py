"""Does the release's 95 % residual-risk bound cover the truth on real classroom text?

    python bench/residual_coverage_bench.py [--data ../shared/data] [--repeats 1000] [--preset tuned]

The simulation in ``tests/pipeline/test_residual.py`` draws its misses from the model the bound
assumes (or one near it). Here the misses are a real detector's on real talk: the placeholders of
the shared data (``[STUDENT]`` in bridge, ``Student A`` … ``Student Z`` in NCTE) become generated
names (:func:`pipeline.devset.insert_names`: Faker pools, seeded, one person per placeholder and
dialogue, varied forms such as "Maria", "maria", "Ms. Lopez"), labelled NAME: that is the gold.

Dialogues, the sampling unit: an NCTE row is one student→teacher exchange of two messages, too
small to be a lesson, so the exchanges of one classroom observation (``meta.obs_id``) are joined in
``meta.exchange_idx`` order into one dialogue (774 lessons of 2 to 214 messages; "Student A" is
one child within a lesson, another in the next). Bridge's excerpts of one tutoring session (the id
before its last ``_``) are joined the same way (520 sessions). The release is Presidio's spans
(``--preset``), run once over every dialogue; a gold name its spans do not cover is a miss.

Each audit draws ``n`` dialogues at random (3, 6, 10, 30; ``--repeats`` times each, seeded) as the
gold sample of ``manage.py deidentify --gold`` and counts it with the same code
(:class:`pipeline.surrogates.batch.ResidualTally`, whose bound the app shares through
:func:`pipeline.metrics.residual.estimate_residual`). The truth is the misses left in the
dialogues not drawn (the drawn ones go out with their gold). Printed per corpus and size: how often
how often a bound is stated (otherwise the estimate says too few dialogues were reviewed), how
often a stated bound covers the truth, how often an audit makes no false promise (a bound that
covers, or none), the median stated bound and the true residual per 1,000 released messages. The corpus lines give
how clustered the misses are: the moment estimate of the gamma shape ``k`` over all dialogues
(the bound assumes at most 0.3), and the share of misses in the worst two dialogues.

Nothing of the data is written anywhere: it is read, renamed in memory and counted.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from statistics import median

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.devset import insert_names  # noqa: E402
from pipeline.formats.native import iter_jsonl_dialogues  # noqa: E402
from pipeline.metrics.residual import ASSUMED_DISPERSION, uncovered  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.surrogates.batch import ResidualTally  # noqa: E402
from pipeline.surrogates.stream import iter_spans  # noqa: E402
from pipeline.synthetic import pools as P  # noqa: E402
from pipeline.types import Dialogue, Message, Span  # noqa: E402

SIZES = (3, 6, 10, 30)
SEED = 20261206


def _lesson_key(d: Dialogue) -> tuple[str, int]:
    """Which dialogue an excerpt belongs to, and its place there."""
    if "obs_id" in d.meta:  # NCTE: the exchanges of one observed lesson
        return f"ncte-lesson-{d.meta['obs_id']}", int(d.meta["exchange_idx"])
    session, _, part = d.id.rpartition("_")  # bridge: the excerpts of one tutoring session
    return session, int(part) if part.isdigit() else 0


def load_lessons(path: Path, pools: P.Pools, seed: int) -> list[Dialogue]:
    """The file's excerpts joined into whole dialogues, placeholders replaced by named gold."""
    parts: dict[str, list[tuple[int, Dialogue]]] = defaultdict(list)
    seen: set[str] = set()
    with path.open(encoding="utf-8") as fh:
        for d in iter_jsonl_dialogues(fh):
            if d.id in seen:  # bridge repeats a few excerpts verbatim
                continue
            seen.add(d.id)
            key, place = _lesson_key(d)
            parts[key].append((place, d))
    lessons = []
    for key, excerpts in parts.items():
        texts = [m for _, d in sorted(excerpts, key=lambda p: p[0]) for m in d.messages]
        joined = Dialogue(key, tuple(Message(m.text, speaker=m.speaker, role=m.role, index=i, ts=m.ts)
                                     for i, m in enumerate(texts)))
        lessons.append(insert_names(joined, pools, random.Random(f"residual:{seed}:{key}"), keep_placeholders=0))
    return lessons


def misses_per_dialogue(lessons: list[Dialogue], spans: dict[str, list[list[Span]]]) -> np.ndarray:
    return np.array([sum(len(uncovered(m.spans, ss)) for m, ss in zip(d.messages, spans[d.id], strict=True))
                     for d in lessons])


def describe(name: str, lessons: list[Dialogue], misses: np.ndarray) -> str:
    """The corpus and how clustered its misses are (Pearson's moment estimate of the gamma shape
    per average dialogue, the quantity the bound assumes to be at least 0.3)."""
    length = np.array([len(d.messages) for d in lessons])
    gold = sum(len(m.spans) for d in lessons for m in d.messages)
    mu = misses.sum() / length.sum()
    phi = ((misses - mu * length) ** 2 / (mu * length)).sum() / (len(lessons) - 1) if mu else 1.0
    k = mu * length.mean() / (phi - 1) if phi > 1 else float("inf")
    top2 = np.sort(misses)[-2:].sum() / misses.sum() if misses.sum() else 0.0
    return (f"{name}: {len(lessons)} dialogues, {length.sum():,} messages ({length.min()}–{length.max()} per "
            f"dialogue), {gold:,} gold names, {misses.sum():,} missed ({1 - misses.sum() / gold:.1%} recall) in "
            f"{(misses > 0).sum()} dialogues; true residual {1000 * misses.sum() / length.sum():.1f} per 1,000; "
            f"clustering k = {k:.2f} (assumed ≤ {ASSUMED_DISPERSION}), worst two dialogues hold {top2:.0%} "
            "of the misses")


def audits(lessons: list[Dialogue], spans: dict[str, list[list[Span]]], misses: np.ndarray, n: int,
           repeats: int, seed: int) -> dict[str, float]:
    """``repeats`` audits of ``n`` random dialogues, each counted as ``deidentify --gold`` counts."""
    rng = np.random.default_rng(seed)
    released = sum(len(d.messages) for d in lessons)
    covered = stated = 0
    uppers, truths = [], []
    for _ in range(repeats):
        drawn = rng.choice(len(lessons), n, replace=False)
        tally = ResidualTally([lessons[i] for i in drawn])
        for d in lessons:
            tally.add(d, spans[d.id])
        est = tally.to_dict()
        truth = int(misses.sum() - misses[drawn].sum())
        truths.append(1000 * truth / released)
        if est["per_1000_upper"] is None:
            continue  # too few dialogues to state a bound: nothing to cover, nothing promised
        stated += 1
        covered += est["residual_spans_upper"] >= truth
        uppers.append(est["per_1000_upper"])
    return {"n": n, "stated": stated / repeats, "coverage": covered / stated if stated else float("nan"),
            "kept": (covered + repeats - stated) / repeats,
            "median_upper": median(uppers) if uppers else float("nan"), "truth": float(np.mean(truths))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--repeats", type=int, default=1000)
    parser.add_argument("--preset", default="tuned", help="Presidio preset: the release's detector")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    pools = P.build_pools(args.seed)
    corpora = {"NCTE lessons": load_lessons(args.data / "ncte_uptake.jsonl", pools, args.seed),
               "bridge sessions": load_lessons(args.data / "bridge.jsonl", pools, args.seed)}
    corpora["both"] = corpora["NCTE lessons"] + corpora["bridge sessions"]
    t0 = time.perf_counter()
    detector = build("presidio", {"preset": args.preset})
    spans = {d.id: found for d, found in iter_spans(corpora["both"], detector)}
    print(f"presidio {args.preset}: {sum(len(d.messages) for d in corpora['both']):,} messages in "
          f"{time.perf_counter() - t0:.0f} s")
    rows = []
    for name, lessons in corpora.items():
        misses = misses_per_dialogue(lessons, spans)
        print(describe(name, lessons, misses))
        rows += [(name, audits(lessons, spans, misses, n, args.repeats, args.seed + n)) for n in SIZES]
    print("\n| corpus | dialogues audited | bound stated | coverage of the 95 % bound (stated) | no false bound | "
          "median bound per 1,000 | true residual per 1,000 |\n|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['n']} | {r['stated']:.1%} | {r['coverage']:.1%} | {r['kept']:.1%} | {r['median_upper']:.1f} | "
              f"{r['truth']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
