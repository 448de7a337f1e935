"""Agreement figures against hand-computed examples and against scikit-learn / krippendorff."""

from __future__ import annotations

import csv
import io
import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from pipeline.metrics.agreement import (
    AnnotatedItem,
    AnnotatorLabels,
    agreement_report,
    alpha_from_coincidence,
    bootstrap_weights,
    f1_from_counts,
    fleiss_kappa,
    kappa_from_confusion,
    match_spans,
    resampled_sums,
    token_labels,
)
from pipeline.types import MATH, NON_MATH, Span

LABELS = ("NAME", "LOCATION", "AGE")
WORDS = ("so", "Alex", "has", "5", "apples", "in", "Boston", "ok", "Maya", "is", "12", "3.5")
PII = {"Alex": "NAME", "Maya": "NAME", "Boston": "LOCATION", "12": "AGE"}


def word_spans(text: str, rng: random.Random, p_mark: float = 0.8, p_slip: float = 0.1):
    spans, pos = [], 0
    for w in text.split(" "):
        label = PII.get(w)
        if label and rng.random() < p_mark:
            if rng.random() < p_slip:
                label = rng.choice(LABELS)
            spans.append(Span(pos, pos + len(w), label))
        elif rng.random() < 0.03:
            spans.append(Span(pos, pos + len(w), "NAME"))
        pos += len(w) + 1
    return tuple(spans)


def make_items(n_dialogues=25, per=8, annotators=("A", "B", "C"), p_missing=0.2, seed=3):
    rng = random.Random(seed)
    items = []
    for d in range(n_dialogues):
        for i in range(per):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
            anns = {}
            for j, a in enumerate(annotators):
                if j >= 2 and rng.random() < p_missing:
                    continue  # this annotator did not label the item
                anns[a] = AnnotatorLabels(word_spans(text, rng), rng.choice(("blind", "aware")))
            items.append(AnnotatedItem(f"d{d}", i, text, rng.choice(("tutor", "student")),
                                       rng.choice((MATH, NON_MATH)), anns))
    return items


def sequences(items, a, b=None, labels=LABELS):
    """Token label sequences of annotator a (and b) over items both labelled."""
    ya, yb = [], []
    for it in items:
        if a in it.annotations and (b is None or b in it.annotations):
            ya += token_labels(it.text, it.annotations[a].spans, labels)
            if b is not None:
                yb += token_labels(it.text, it.annotations[b].spans, labels)
    return ya, yb


# --------------------------------------------------------------------------- formulas


def test_kappa_from_confusion_equals_sklearn_on_random_labels():
    rng = np.random.default_rng(0)
    for _ in range(20):
        k = int(rng.integers(2, 6))
        a = rng.integers(0, k, 300)
        b = np.where(rng.random(300) < 0.6, a, rng.integers(0, k, 300))
        conf = np.zeros((k, k))
        np.add.at(conf, (a, b), 1)
        assert kappa_from_confusion(conf) == pytest.approx(cohen_kappa_score(a, b))


def test_kappa_is_nan_when_chance_agreement_is_total():
    assert np.isnan(kappa_from_confusion(np.array([[5.0, 0], [0, 0]])))


def test_fleiss_kappa_hand_computed_example():
    # Fleiss (1971) style worked example (10 subjects, 14 raters, 5 categories), as printed
    # on the Wikipedia page of Fleiss' kappa: P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_kappa_tiny_example_by_hand():
    # 3 raters, 2 categories, items (3,0), (2,1), (0,3):
    # P_i = 1, 1/3, 1 -> P-bar = 7/9; p = (5/9, 4/9) -> P_e = 41/81; kappa = (63-41)/(81-41).
    assert fleiss_kappa([[3, 0], [2, 1], [0, 3]]) == pytest.approx(22 / 40)


def test_alpha_tiny_example_by_hand():
    # units (a,a), (a,b), (b,b): o_aa = o_bb = 2, o_ab = o_ba = 1, n = 6
    # alpha = 1 - (n - 1) * 2 / (36 - 9 - 9) = 1 - 10/18
    coinc = np.array([[2.0, 1.0], [1.0, 2.0]])
    assert alpha_from_coincidence(coinc) == pytest.approx(1 - 10 / 18)
    data = np.array([[0, 0, 1], [0, 1, 1]], dtype=float)
    assert krippendorff.alpha(reliability_data=data, level_of_measurement="nominal") == (
        pytest.approx(1 - 10 / 18))


def test_token_labels_io_and_partial_overlap():
    text = "hi Maya Lopez, 12 ok"
    spans = [Span(3, 13, "NAME"), Span(15, 16, "AGE")]  # second span covers half of "12"
    assert token_labels(text, spans, LABELS) == ["O", "NAME", "NAME", "O", "AGE", "O"]


@pytest.mark.parametrize(
    ("a", "b", "match", "typed", "expected"),
    [
        ([Span(0, 4, "NAME")], [Span(0, 4, "NAME")], "exact", True, (1, 1)),
        ([Span(0, 4, "NAME")], [Span(0, 3, "NAME")], "exact", True, (0, 0)),
        ([Span(0, 4, "NAME")], [Span(0, 3, "NAME")], "overlap", True, (1, 1)),
        ([Span(0, 4, "NAME")], [Span(0, 4, "AGE")], "overlap", True, (0, 0)),
        ([Span(0, 4, "NAME")], [Span(0, 4, "AGE")], "exact", False, (1, 1)),
        ([Span(0, 10, "NAME")], [Span(0, 3, "NAME"), Span(5, 9, "NAME")], "overlap", True,
         (1, 2)),
    ],
)
def test_match_spans(a, b, match, typed, expected):
    assert match_spans(a, b, match=match, typed=typed) == expected


def test_span_f1_from_counts():
    # a: 4 spans, 3 matched; b: 5 spans, 2 matched -> P = 2/5, R = 3/4
    assert f1_from_counts(4, 5, 3, 2) == pytest.approx(2 * 0.4 * 0.75 / 1.15)
    assert f1_from_counts(3, 0, 0, 0) == 0.0
    assert np.isnan(f1_from_counts(0, 0, 0, 0))


def test_bootstrap_weights_draw_each_resample_of_full_size():
    w = bootstrap_weights(7, 50, seed=1)
    assert w.shape == (50, 7)
    assert (w.sum(axis=1) == 7).all()
    assert (bootstrap_weights(7, 50, seed=1) == w).all()


def test_bootstrap_weights_count_one_matrix_of_draws_in_small_integers():
    """Drawn one resample at a time, kept as bytes: the same draws as one (n_boot, n) call."""
    draws = np.random.default_rng(3).integers(0, 40, size=(230, 40))
    w = bootstrap_weights(40, 230, seed=3)
    assert w.dtype == np.uint8
    assert (w == np.stack([np.bincount(row, minlength=40) for row in draws])).all()
    counts = np.random.default_rng(4).integers(0, 5, size=(40, 6)).astype(float)
    counts[:, 2] = 0  # a column no dialogue counts is skipped, and stays zero
    assert np.allclose(resampled_sums(w, counts), w.astype(float) @ counts)  # several blocks of resamples


# --------------------------------------------------------------------------- the report


@pytest.fixture(scope="module")
def items():
    return make_items()


@pytest.fixture(scope="module")
def report(items):
    return agreement_report(items, labels=LABELS, n_boot=200, seed=7)


@pytest.mark.parametrize("pair", [("A", "B"), ("A", "C"), ("B", "C")])
def test_pairwise_cohen_kappa_equals_sklearn(items, report, pair):
    a, b = pair
    ya, yb = sequences(items, a, b)
    typed = report.get("cohen_kappa", pair=f"{a}~{b}", scheme="typed")
    assert typed.value == pytest.approx(cohen_kappa_score(ya, yb))
    assert typed.n == len(ya)
    untyped = report.get("cohen_kappa", pair=f"{a}~{b}", scheme="untyped")
    assert untyped.value == pytest.approx(
        cohen_kappa_score([x != "O" for x in ya], [x != "O" for x in yb]))
    for label in LABELS:
        per = report.get("cohen_kappa", pair=f"{a}~{b}", by="label", group=label)
        assert per.value == pytest.approx(
            cohen_kappa_score([x == label for x in ya], [x == label for x in yb]))


def reliability(items, annotators=("A", "B", "C"), labels=LABELS, condition=None):
    code = {"O": 0, **{lab: i + 1 for i, lab in enumerate(labels)}}
    rows = []
    for a in annotators:
        row = []
        for it in items:
            n = len(token_labels(it.text, (), labels))
            al = it.annotations.get(a)
            if al is None or (condition and al.condition != condition):
                row += [np.nan] * n
            else:
                row += [code[x] for x in token_labels(it.text, al.spans, labels)]
        rows.append(row)
    return np.array(rows, dtype=float)


def test_krippendorff_alpha_equals_package_with_missing_values(items, report):
    data = reliability(items)
    assert np.isnan(data).any()  # C skipped some items: missing, not "O"
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert report.get("krippendorff_alpha", scheme="typed").value == pytest.approx(expected)
    binary = np.where(np.isnan(data), np.nan, (data > 0).astype(float))
    assert report.get("krippendorff_alpha", scheme="untyped").value == pytest.approx(
        krippendorff.alpha(reliability_data=binary, level_of_measurement="nominal"))
    for i, label in enumerate(LABELS, start=1):
        one = np.where(np.isnan(data), np.nan, (data == i).astype(float))
        got = report.get("krippendorff_alpha", by="label", group=label).value
        assert got == pytest.approx(
            krippendorff.alpha(reliability_data=one, level_of_measurement="nominal"))


def test_alpha_by_condition_uses_only_that_conditions_annotations(items, report):
    data = reliability(items, condition="aware")
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    got = report.get("krippendorff_alpha", by="condition", group="aware", scheme="typed")
    assert got.value == pytest.approx(expected)


def test_fleiss_kappa_equals_table_formula(items, report):
    data = reliability(items)
    table = np.stack([(data == c).sum(axis=0) for c in range(len(LABELS) + 1)], axis=1)
    assert report.get("fleiss_kappa", scheme="typed").value == pytest.approx(fleiss_kappa(table))


def test_fleiss_equals_cohen_setting_two_raters_constant():
    """With two raters on every item, Fleiss' kappa is Scott's pi: check against the table."""
    its = make_items(annotators=("A", "B"), seed=11)
    rep = agreement_report(its, labels=LABELS, n_boot=0)
    ya, yb = sequences(its, "A", "B")
    code = {"O": 0, **{lab: i + 1 for i, lab in enumerate(LABELS)}}
    table = np.zeros((len(ya), len(LABELS) + 1))
    for i, (x, y) in enumerate(zip(ya, yb, strict=True)):
        table[i, code[x]] += 1
        table[i, code[y]] += 1
    assert rep.get("fleiss_kappa", scheme="typed").value == pytest.approx(fleiss_kappa(table))


def test_breakdown_by_role_equals_report_on_subset(items, report):
    students = [it for it in items if it.role == "student"]
    sub = agreement_report(students, labels=LABELS, n_boot=0)
    for metric in ("cohen_kappa", "krippendorff_alpha", "fleiss_kappa"):
        pair = "A~B" if metric == "cohen_kappa" else "*"
        whole = report.get(metric, pair=pair, by="role", group="student", scheme="typed")
        assert whole.value == pytest.approx(sub.get(metric, pair=pair, scheme="typed").value)
    span = report.get("span_f1", pair="A~C", by="role", group="student", scheme="overlap")
    assert span.value == pytest.approx(sub.get("span_f1", pair="A~C", scheme="overlap").value)


def test_span_f1_by_hand():
    text = "Alex met Maya in Boston"
    a = AnnotatorLabels((Span(0, 4, "NAME"), Span(9, 13, "NAME"), Span(17, 23, "LOCATION")))
    b = AnnotatorLabels((Span(0, 4, "NAME"), Span(9, 12, "NAME")), "aware")
    rep = agreement_report([AnnotatedItem("d", 0, text, annotations={"a": a, "b": b})],
                           n_boot=10)
    exact = rep.get("span_f1", scheme="exact")
    overlap = rep.get("span_f1", scheme="overlap")
    assert exact.value == pytest.approx(2 * 1 / 5)  # 1 common of 3 + 2
    assert overlap.value == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))
    assert rep.get("span_f1", scheme="exact", by="label", group="LOCATION").value == 0.0
    assert rep.get("span_f1", scheme="exact", by="condition", group="mixed").n == 5


def test_missing_annotator_is_not_counted_as_outside():
    text = "hello Maya"
    it1 = AnnotatedItem("d1", 0, text, annotations={
        "A": AnnotatorLabels((Span(6, 10, "NAME"),)), "B": AnnotatorLabels((Span(6, 10, "NAME"),))})
    it2 = AnnotatedItem("d2", 0, text, annotations={"A": AnnotatorLabels((Span(6, 10, "NAME"),))})
    rep = agreement_report([it1, it2], n_boot=0)
    kappa = rep.get("cohen_kappa", pair="A~B", scheme="typed")
    assert kappa.value == pytest.approx(1.0)
    assert kappa.n == 2


def test_vectorised_bootstrap_equals_sklearn_on_resampled_dialogues(items):
    """The one resample of n_boot=1 is the kappa of the dialogues that resample drew."""
    seed = 5
    rep = agreement_report(items, labels=LABELS, n_boot=1, seed=seed)
    dialogues = list(dict.fromkeys(it.dialogue_id for it in items))
    w = bootstrap_weights(len(dialogues), 1, seed)[0]
    drawn = [it for d, times in zip(dialogues, w, strict=True) for _ in range(int(times))
             for it in items if it.dialogue_id == d]
    ya, yb = sequences(drawn, "A", "B")
    fig = rep.get("cohen_kappa", pair="A~B", scheme="typed")
    assert fig.ci_low == pytest.approx(cohen_kappa_score(ya, yb))
    data = reliability(drawn)
    alpha = rep.get("krippendorff_alpha", scheme="typed")
    assert alpha.ci_low == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_confidence_intervals_bracket_the_point(report):
    main = [f for f in report.figures if f.by == "all" and f.n > 50]
    assert main
    for f in main:
        assert f.ci_low <= f.value + 1e-9 and f.value - 1e-9 <= f.ci_high, f


def test_identical_dialogues_give_a_degenerate_interval():
    text = "Maya is 12"
    ann = {"A": AnnotatorLabels((Span(0, 4, "NAME"),)),
           "B": AnnotatorLabels((Span(0, 4, "NAME"), Span(8, 10, "AGE")))}
    its = [AnnotatedItem(f"d{i}", 0, text, annotations=ann) for i in range(6)]
    f = agreement_report(its, n_boot=50).get("cohen_kappa", pair="A~B", scheme="typed")
    assert f.ci_low == pytest.approx(f.value) and f.ci_high == pytest.approx(f.value)


def test_report_is_deterministic_and_serialises(items, report):
    again = agreement_report(items, labels=LABELS, n_boot=200, seed=7)
    assert again.figures == report.figures
    d = report.to_dict()
    assert d["annotators"] == ["A", "B", "C"] and d["n_boot"] == 200
    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert len(rows) == len(report.figures) == len(d["figures"])
    assert {r["by"] for r in rows} == {"all", "label", "role", "segment", "condition"}
    assert {r["metric"] for r in rows} == {
        "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "span_f1"}


def test_single_annotator_gives_no_figures():
    it = AnnotatedItem("d", 0, "hi", annotations={"A": AnnotatorLabels()})
    rep = agreement_report([it], n_boot=10)
    assert rep.figures == [] and rep.annotators == ("A",)


def test_the_table_counted_in_blocks_of_tokens_gives_the_same_figures(items, report, monkeypatch):
    """The token table is counted a block of tokens (and of marked units) at a time,
    for flat working memory at a million messages; blocks far smaller than the table must not
    move a figure."""
    from pipeline.metrics.agreement import table, token_level

    monkeypatch.setattr(table, "TOKEN_BLOCK", 7)
    monkeypatch.setattr(token_level, "UNIT_BLOCK", 3)
    blocked = agreement_report(items, labels=LABELS, n_boot=200, seed=7)
    assert report.n_tokens > 10 * 7
    assert [f.to_dict() | {"value": 0, "ci_low": 0, "ci_high": 0} for f in blocked.figures] == [
        f.to_dict() | {"value": 0, "ci_low": 0, "ci_high": 0} for f in report.figures]
    figures = [[f.value, f.ci_low, f.ci_high] for f in blocked.figures]
    assert np.allclose(figures, [[f.value, f.ci_low, f.ci_high] for f in report.figures], rtol=0, atol=1e-12,
                       equal_nan=True)  # sums of weights in another order: the last bit may differ


def test_only_items_someone_marked_get_token_rows_and_the_figures_stay():
    """An item nobody marked is O for every token and every annotator who labelled it, so
    its tokens are counted per item, not stored one row each (most of the gold is such items). The
    same items with a span of a label outside the taxonomy (ignored, but the item then takes the
    token rows) give the same figures, exactly: the counts are whole numbers either way."""
    from dataclasses import replace

    from pipeline.metrics.agreement.table import build_table
    from pipeline.text import tokenize

    rng = random.Random(11)
    items = [replace(it, annotations={a: AnnotatorLabels([] if rng.random() < 0.7 else al.spans, al.condition)
                                      for a, al in it.annotations.items()})
             for it in make_items(n_dialogues=30, per=10, annotators=("A", "B", "C", "D"), seed=5)]
    unmarked = [not any(al.spans for al in it.annotations.values()) for it in items]
    assert 50 < sum(unmarked) < len(items)

    def with_an_ignored_span(it):
        first = next(iter(it.annotations))
        return replace(it, annotations={a: AnnotatorLabels([Span(0, 1, "IGNORED")], al.condition) if a == first else al
                                        for a, al in it.annotations.items()})

    as_rows = [with_an_ignored_span(it) if plain else it for it, plain in zip(items, unmarked, strict=True)]

    table, _ = build_table(items, LABELS)
    full, _ = build_table(as_rows, LABELS)
    marked_tokens = sum(len(tokenize(it.text)) for it, plain in zip(items, unmarked, strict=True) if not plain)
    assert table.lab.shape[1] == marked_tokens < full.lab.shape[1] == table.n_tokens
    per_item = agreement_report(items, labels=LABELS, n_boot=100, seed=2)
    per_token = agreement_report(as_rows, labels=LABELS, n_boot=100, seed=2)
    assert per_item.n_tokens == per_token.n_tokens == full.n_tokens
    assert [f.to_dict() for f in per_item.figures] == [f.to_dict() for f in per_token.figures]
    assert {f.metric for f in per_item.figures} >= {"cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "span_f1"}


def test_items_of_a_dialogue_that_do_not_come_together_are_refused():
    """The report sums each dialogue's counts a block of dialogues at a time: a dialogue that comes
    back after another began would be split between blocks, so it is refused, not miscounted."""
    its = make_items(n_dialogues=3, per=2)
    with pytest.raises(ValueError, match="do not come together"):
        agreement_report([*its[:2], *its[2:4], its[0]], labels=LABELS, n_boot=0)
