"""Inter-annotator agreement: token-level kappas and alpha, span-level F1, dialogue bootstrap.

Everything is computed from additive per-dialogue counts (confusion matrices, coincidence
matrices, Fleiss sufficient statistics, span match counts; the formulas are in
:mod:`pipeline.metrics.coefficients`). A bootstrap resample of dialogues is
then one weight vector, and all resamples together are one matrix product
``weights (B x D) @ counts (D x F)``: 1,000 resamples cost one BLAS call per block instead of
1,000 library calls. The point estimate is the same formula on the full sample, which equals
scikit-learn's ``cohen_kappa_score`` and the ``krippendorff`` package's nominal alpha (the tests
pin both).

Token level uses word tokens (:func:`pipeline.text.tokenize`) in IO encoding: a token takes the
label of the span that overlaps it, ``O`` otherwise. *Typed* compares labels; *untyped* compares
PII vs not. An annotator who did not label an item is missing there (not ``O``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pipeline.metrics.agreement.figures import AgreementReport, Emitter, Figure
from pipeline.metrics.agreement.items import (
    AWARE,
    BLIND,
    CONDITIONS,
    AnnotatedItem,
    AnnotatorLabels,
)
from pipeline.metrics.agreement.span_level import span_figures
from pipeline.metrics.agreement.table import build_table
from pipeline.metrics.agreement.token_level import all_rater_figures, cohen_figures
from pipeline.metrics.coefficients import (  # re-exported: the report's formulas
    OUTSIDE,
    alpha_from_coincidence,
    bootstrap_weights,
    collapse_matrix,
    f1_from_counts,
    fleiss_from_stats,
    fleiss_kappa,
    kappa_from_confusion,
    match_spans,
    percentile_ci,
    resampled_sums,
    token_labels,
)

__all__ = [
    "AWARE", "BLIND", "CONDITIONS", "OUTSIDE", "AgreementReport", "AnnotatedItem", "AnnotatorLabels",
    "Figure", "agreement_report", "alpha_from_coincidence", "bootstrap_weights", "collapse_matrix",
    "f1_from_counts", "fleiss_from_stats", "fleiss_kappa", "kappa_from_confusion", "match_spans",
    "percentile_ci", "resampled_sums", "token_labels",
]


def agreement_report(
    items: Iterable[AnnotatedItem],
    *,
    labels: Sequence[str] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AgreementReport:
    """Every agreement figure of ``items`` with dialogue-bootstrap confidence intervals.

    ``labels`` fixes the taxonomy (spans with other labels are ignored); by default it is the set
    of labels annotators used. The items are read once, one at a time (an iterator is never held
    whole).
    """
    t, matches = build_table(items, labels)
    n_items = len(t.item_d)
    w = bootstrap_weights(t.n_dialogues, n_boot, seed)
    out = Emitter(confidence)
    if len(t.annotators) >= 2:
        cohen_figures(out, t, w)
        all_rater_figures(out, t, w)
        span_figures(out, matches, t, w)
    return AgreementReport(
        annotators=t.annotators, labels=t.labels, n_items=n_items,
        n_dialogues=t.n_dialogues, n_tokens=t.n_tokens, n_boot=n_boot,
        confidence=confidence, seed=seed, figures=out.figures,
    )
