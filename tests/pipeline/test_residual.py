"""Residual-risk estimate: misses, strata, the zero-miss bound and its coverage in simulation, on
messages drawn one by one and on whole dialogues whose misses cluster."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.metrics.residual import Stratum, estimate_residual, uncovered
from pipeline.types import Span


def test_uncovered_needs_the_whole_gold_span_covered_by_any_label():
    gold = [Span(0, 5, "NAME"), Span(10, 20, "SCHOOL"), Span(30, 35, "NAME")]
    spans = [Span(0, 5, "OTHER_IDENTIFIER"), Span(10, 14, "SCHOOL"), Span(14, 20, "SCHOOL"), Span(31, 35, "NAME")]
    assert uncovered(gold, spans) == [Span(30, 35, "NAME")]
    assert uncovered(gold, []) == gold


def test_zero_found_in_400_still_gives_a_bound():
    est = estimate_residual([Stratum("unflagged", released=400_000, sampled=400, gold=0, missed=0)])
    assert est.available and est.per_1000 == 0
    # exact Poisson bound -ln(0.05)/400 (Clopper-Pearson: 1 - 0.05**(1/400) = 7.46 per 1,000)
    assert 7.4 < est.per_1000_upper < 7.5
    assert est.sentence == "None found in 400 reviewed messages; at most 7.5 per 1,000 released messages (95 %)."
    assert "recall" not in est.sentence


def test_strata_are_weighted_by_their_sampling_rate():
    flagged = Stratum("flagged", released=100, sampled=100, gold=120, missed=6)  # census
    unflagged = Stratum("unflagged", released=1000, sampled=50, gold=2, missed=2, rate=0.05)
    est = estimate_residual([flagged, unflagged])
    # 6 + 2 misses counted + 950 unreviewed unflagged messages at 2 misses per 50 (weight 1/r in all)
    assert est.residual_spans == pytest.approx(6 + 2 + 950 * 2 / 50)
    assert est.per_1000 == pytest.approx(1000 * 46 / 1100)
    assert est.recall == pytest.approx(1 - 46 / (120 + 2 + 950 * 2 / 50))
    assert est.per_1000_upper > est.per_1000
    assert est.to_dict()["strata"][1]["rate"] == 0.05


def test_no_audit_sample_is_said_plainly():
    est = estimate_residual([Stratum("flagged", released=10, sampled=10, gold=9, missed=0),
                             Stratum("unflagged", released=90, sampled=0)])
    assert not est.available and est.per_1000_upper is None
    assert est.sentence.startswith("No audit sample to estimate from")


def test_a_full_review_is_a_census_without_sampling_error():
    est = estimate_residual([Stratum("flagged", released=4, sampled=4, gold=5, missed=1),
                             Stratum("unflagged", released=6, sampled=6, gold=1, missed=1)])
    assert est.census and est.residual_spans == est.residual_spans_upper == 2
    assert est.per_1000 == 200 and "Every one of the 10 released messages was reviewed" in est.sentence
    assert "recall" not in est.sentence


def test_the_headline_names_the_dialogues_and_what_was_found():
    strata = [Stratum("released", released=1396, sampled=185, gold=40, missed=0, missed_if_unreviewed=2,
                      units=12, clustered_sq=2 / 15)]
    est = estimate_residual(strata, dialogues=12)
    assert est.sentence.startswith("2 miss(es) found in 185 reviewed messages (12 dialogues): about ")
    assert est.sampled_dialogues == 12 and "recall" not in est.sentence
    clean = estimate_residual([Stratum("released", released=1396, sampled=185, gold=40, units=12)], dialogues=12)
    assert clean.sentence.startswith("None found in 185 reviewed messages (12 dialogues); at most ")


def test_gold_releases_count_what_unreviewed_messages_would_miss():
    # a release from gold misses nothing on reviewed messages; unreviewed ones get no spans at all
    est = estimate_residual([Stratum("unflagged", released=200, sampled=20, gold=4, missed=0,
                                     missed_if_unreviewed=4)])
    assert est.residual_spans == pytest.approx(180 * 4 / 20)


def _simulate(rng, *, sims, n, flagged_share, spans_flagged, miss_flagged, pii_unflagged, rate):
    """Populations of released messages, a flagged census and an audit sample of the rest."""
    flagged = rng.random((sims, n)) < flagged_share
    gold = np.where(flagged, 1 + rng.poisson(spans_flagged, (sims, n)), rng.poisson(pii_unflagged, (sims, n)))
    missed = np.where(flagged, rng.binomial(gold, miss_flagged), gold)  # unflagged: all of it missed
    n_u = (~flagged).sum(axis=1)
    k = np.rint(rate * n_u).astype(int)
    keys = np.where(flagged, np.inf, rng.random((sims, n)))
    ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
    audit = ~flagged & (ranks < k[:, None])
    rows = []
    for i in range(sims):
        f, a = flagged[i], audit[i]
        strata = [
            Stratum("flagged", released=int(f.sum()), sampled=int(f.sum()), gold=int(gold[i, f].sum()),
                    missed=int(missed[i, f].sum())),
            Stratum("unflagged", released=int(n_u[i]), sampled=int(a.sum()), gold=int(gold[i, a].sum()),
                    missed=int(missed[i, a].sum()), rate=rate),
        ]
        truth_missed, truth_gold = missed[i].sum(), gold[i].sum()
        rows.append((estimate_residual(strata), 1000 * truth_missed / n, 1 - truth_missed / truth_gold))
    return rows


@pytest.mark.parametrize("pii_unflagged", [0.004, 0.03])
def test_simulated_upper_bound_covers_the_true_residual_at_the_nominal_rate(pii_unflagged):
    rng = np.random.default_rng(20261201)
    rows = _simulate(rng, sims=400, n=5000, flagged_share=0.2, spans_flagged=0.4, miss_flagged=0.1,
                     pii_unflagged=pii_unflagged, rate=0.05)
    covered = np.mean([est.per_1000_upper >= truth for est, truth, _ in rows])
    recall_covered = np.mean([est.recall_lower <= recall for est, _, recall in rows])
    truth = np.mean([t for _, t, _ in rows])
    mean_estimate = np.mean([est.per_1000 for est, _, _ in rows])
    assert covered >= 0.94, covered
    assert recall_covered >= 0.94, recall_covered
    assert mean_estimate == pytest.approx(truth, rel=0.05)  # unbiased under the design
    print(f"unflagged PII {pii_unflagged}: coverage {covered:.3f}, recall-lower coverage {recall_covered:.3f}, "
          f"truth {truth:.2f}/1000, mean estimate {mean_estimate:.2f}, "
          f"mean upper {np.mean([e.per_1000_upper for e, _, _ in rows]):.2f}; example: {rows[0][0].sentence}")


def _clustered_population(rng, kind, dialogues):
    """Messages per dialogue and misses per dialogue: most dialogues clean, a few with many."""
    length = rng.integers(300, 700, dialogues)
    if kind == "gamma-Poisson":  # k = 0.3: 64 % of dialogues clean, 9 % with four misses or more
        rate = rng.gamma(0.3, 1 / 0.3, dialogues)
        return length, rng.poisson(rate * length / length.mean())
    dirty = rng.random(dialogues) < 0.3  # 70 % clean, the others 3.7 misses on average (up to 30 odd)
    return length, np.where(dirty, rng.geometric(1 / 3.7, dialogues), 0)


def _audits_of_dialogues(seed, kind, n, *, sims=400, dialogues=63):
    """Audits of ``n`` random whole dialogues of clustered populations: (estimate with dialogues as
    the unit, estimate with messages as the unit, true misses left in the unreviewed dialogues)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(sims):
        length, misses = _clustered_population(rng, kind, dialogues)
        audit = np.zeros(dialogues, bool)
        audit[rng.choice(dialogues, n, replace=False)] = True
        x = int(misses[audit].sum())
        common = {"released": int(length.sum()), "sampled": int(length[audit].sum()), "gold": x,
                  "missed_if_unreviewed": x}
        by_dialogue = Stratum("all", units=n, clustered_sq=float((misses[audit] ** 2 / length[audit]).sum()),
                              **common)
        rows.append((estimate_residual([by_dialogue]), estimate_residual([Stratum("all", **common)]),
                     int(misses[~audit].sum())))
    return rows


@pytest.mark.parametrize("kind", ["gamma-Poisson", "zero-inflated"])
def test_the_bound_covers_clustered_misses_at_every_audit_size(kind):
    before = {}
    for n in (3, 6, 10, 30):
        rows = _audits_of_dialogues(20261207 + n, kind, n)
        covered = np.mean([est.residual_spans_upper >= truth for est, _, truth in rows])
        before[n] = np.mean([naive.residual_spans_upper >= truth for _, naive, truth in rows])
        mean_estimate = np.mean([est.residual_spans for est, _, _ in rows])
        truth = np.mean([t for *_, t in rows])
        print(f"{kind}, {n} dialogues: coverage {covered:.3f} (messages as the unit: {before[n]:.3f}), "
              f"median upper {np.median([e.per_1000_upper for e, _, _ in rows]):.1f} per 1,000 "
              f"(messages as the unit: {np.median([e.per_1000_upper for _, e, _ in rows]):.1f})")
        assert covered >= 0.93, (n, covered)
        assert mean_estimate == pytest.approx(truth, rel=0.25)  # the ratio estimator, unbiased but noisy
    assert min(before.values()) < 0.9  # messages as the unit: the defect this bound corrects


def test_a_sample_more_clustered_than_assumed_widens_the_bound():
    spread = Stratum("all", released=10_000, sampled=1_000, gold=10, missed_if_unreviewed=10, units=10,
                     clustered_sq=10 * 1**2 / 100)
    crowded = Stratum("all", released=10_000, sampled=1_000, gold=10, missed_if_unreviewed=10, units=10,
                      clustered_sq=10**2 / 100)
    assert spread.dispersion == pytest.approx(0.3) and crowded.dispersion < 0.3
    assert estimate_residual([crowded]).per_1000_upper > estimate_residual([spread]).per_1000_upper
    one_by_one = Stratum("all", released=10_000, sampled=1_000, gold=10, missed_if_unreviewed=10)
    assert estimate_residual([one_by_one]).per_1000_upper < estimate_residual([spread]).per_1000_upper


def test_one_audited_dialogue_is_too_few_to_state_a_bound():
    # one clean dialogue of 120 messages out of 1,396: the exact bound is millions per 1,000
    one = Stratum("released", released=1396, sampled=120, gold=3, missed_if_unreviewed=0, units=1)
    est = estimate_residual([one], dialogues=1)
    assert est.per_1000_upper is None and est.residual_spans_upper is None and est.recall_lower is None
    assert est.per_1000 == 0
    assert est.sentence == ("None found in 120 reviewed messages (1 dialogue), too few to bound the residual PII: "
                            "a bound needs at least 2 reviewed dialogues of this length.")
    assert est.needed == {"released": 2}


def test_misses_found_in_too_small_an_audit_give_the_estimate_but_no_bound():
    est = estimate_residual([Stratum("released", released=400, sampled=6, gold=2, missed_if_unreviewed=2, units=1)],
                            dialogues=1)
    assert est.per_1000 == pytest.approx(1000 * 394 * 2 / 6 / 400) and est.per_1000_upper is None
    assert est.sentence.startswith("2 miss(es) found in 6 reviewed messages (1 dialogue): about 328.3 residual PII "
                                   "spans per 1,000 released messages, too few reviewed to bound it: a bound needs "
                                   "at least ")
    assert "at most" not in est.sentence


@pytest.mark.parametrize("length, units", [(6, None), (6, 1), (6, 3), (500, 1), (60, 1)])
def test_the_number_needed_is_the_smallest_audit_that_states_a_bound(length, units):
    """The rule: a bound is stated when it is at most one miss per unreviewed message; the number
    needed is the smallest audit like this one (here a clean one) whose bound is."""
    def clean(n):
        size = n * length if units else n
        return estimate_residual([Stratum("s", released=100 * length, sampled=size, units=n if units else None)])

    est = clean(units or 1)
    (needed,) = est.needed.values()
    assert est.per_1000_upper is None
    assert clean(needed).per_1000_upper is not None and clean(needed).needed is None
    assert clean(needed - 1).per_1000_upper is None


def test_a_stated_bound_never_exceeds_one_miss_per_message():
    for units in range(1, 40, 3):
        for length in (2, 6, 30, 500):
            for crowded in (0, 1, 5):  # misses in one sampled dialogue
                est = estimate_residual([Stratum("s", released=200 * length, sampled=units * length, gold=crowded,
                                                 missed_if_unreviewed=crowded, units=units,
                                                 clustered_sq=crowded**2 / length)])
                assert est.per_1000_upper is None or est.per_1000_upper <= 1000
                assert (est.per_1000_upper is None) == bool(est.needed)


def test_unsampled_imported_gold_is_advised_a_dialogue_sample_not_a_flagged_audit():
    """Imported gold came with the file: no run flagged it, so a flagged + audit plan cannot reach it."""
    est = estimate_residual([Stratum("imported gold", released=60, sampled=0),
                             Stratum("released", released=40, sampled=40, gold=3, units=4)])
    assert not est.available and est.sentence.startswith(
        "No audit sample to estimate from: none of the 60 imported gold released messages was reviewed")
    assert "random sample of whole dialogues" in est.sentence and "flagged + audit" not in est.sentence
    unflagged = estimate_residual([Stratum("unflagged", released=90, sampled=0)])
    assert "flagged + audit plan" in unflagged.sentence and "whole dialogues" not in unflagged.sentence
