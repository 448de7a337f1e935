"""``deidentify`` and ``detect`` with ``--workers``: the same bytes out with two processes as with
one (rules, and the tagger with a tiny model), and a clear error for a bad count."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from pipeline.parallel import CHUNK_MESSAGES
from pipeline.synthetic import dialogue_to_row, generate_corpus

KEY = "test-surrogate-key-1234"
RELEASE_FILES = ("release.jsonl", "release.mapping.jsonl", "release.leaks.json", "release.utility.json")


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    rows = [dialogue_to_row(d) for d in generate_corpus(40, seed=5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert sum(len(r["messages"]) for r in rows) > CHUNK_MESSAGES  # several chunks, so the pool is used
    return path


@pytest.fixture(scope="module")
def tiny_tagger(tmp_path_factory):
    pytest.importorskip("torch")
    from pipeline.tagger import TrainConfig, train_tagger

    out = tmp_path_factory.mktemp("models")
    info = train_tagger(TrainConfig(generate_corpus(12, seed=3), name="tiny", out_dir=out, epochs=1, num_layers=1, seed=1,
                        dev_fraction=0.25, check_precision=False))
    return {"model_path": str(info.path)}


def _deidentify(corpus_file, out_dir, workers, detector, config=None):
    out_dir.mkdir()
    call_command("deidentify", str(corpus_file), "--out", str(out_dir / "release.jsonl"), "--key", KEY,
                 "--detector", detector, "--config", json.dumps(config or {}), "--workers", str(workers))
    summary = json.loads((out_dir / "release.summary.json").read_text())
    summary.pop("seconds")
    return {name: (out_dir / name).read_bytes() for name in RELEASE_FILES}, summary


def _detect(corpus_file, out, workers, detector, config=None):
    call_command("detect", str(corpus_file), "--detector", detector, "--config", json.dumps(config or {}),
                 "--out", str(out), "--workers", str(workers))
    return out.read_bytes()


def _spans_and_scores(predictions: bytes) -> tuple[list, list[float]]:
    rows = [json.loads(line) for line in predictions.decode().splitlines()]
    spans = [(r["dialogue_id"], r["index"], [(s["start"], s["end"], s["label"]) for s in r["spans"]]) for r in rows]
    return spans, [s["score"] for r in rows for s in r["spans"]]


def test_deidentify_with_two_workers_writes_the_same_release(corpus_file, tmp_path):
    one, one_summary = _deidentify(corpus_file, tmp_path / "one", 1, "rules")
    two, two_summary = _deidentify(corpus_file, tmp_path / "two", 2, "rules")
    assert two == one
    assert two_summary == one_summary
    assert one_summary["spans"] > 0 and b'"method": "offline"' in one["release.mapping.jsonl"]


def test_detect_with_two_workers_writes_the_same_predictions(corpus_file, tmp_path):
    one = _detect(corpus_file, tmp_path / "one.jsonl", 1, "rules")
    assert _detect(corpus_file, tmp_path / "two.jsonl", 2, "rules") == one
    rows = [json.loads(line) for line in one.decode().splitlines()]
    order = [(json.loads(line)["id"], k) for line in corpus_file.read_text().splitlines()
             for k in range(len(json.loads(line)["messages"]))]
    assert [(r["dialogue_id"], r["index"]) for r in rows] == order
    assert any(r["spans"] for r in rows)


@pytest.mark.slow
def test_the_tagger_with_two_workers_gives_the_same_bytes(corpus_file, tiny_tagger, tmp_path):
    config = {**tiny_tagger, "precision": "fp32"}
    one = _detect(corpus_file, tmp_path / "one.jsonl", 1, "tagger", config)
    two = _detect(corpus_file, tmp_path / "two.jsonl", 2, "tagger", config)
    # the same spans; scores to within fp32 rounding: one worker runs torch on two threads, two
    # workers on one each, and a sum taken in another order may differ in its last bit
    assert _spans_and_scores(two)[0] == _spans_and_scores(one)[0]
    assert _spans_and_scores(two)[1] == pytest.approx(_spans_and_scores(one)[1], abs=2e-6)
    released, summary = _deidentify(corpus_file, tmp_path / "r1", 1, "tagger", config)
    assert _deidentify(corpus_file, tmp_path / "r2", 2, "tagger", config) == (released, summary)
    assert summary["model_version"].startswith("tiny/")


@pytest.mark.parametrize("command", ["deidentify", "detect"])
@pytest.mark.parametrize("workers", ["0", "-2"])
def test_a_bad_worker_count_is_a_clear_error(corpus_file, tmp_path, command, workers):
    key = ["--key", KEY] if command == "deidentify" else []
    with pytest.raises(CommandError, match="--workers must be a whole number of processes, at least 1"):
        call_command(command, str(corpus_file), "--out", str(tmp_path / "out.jsonl"), "--detector", "rules",
                     "--workers", workers, *key)
    assert not (tmp_path / "out.jsonl").exists()


def test_a_bad_worker_count_is_refused_from_code_too(corpus_file, tmp_path):
    with pytest.raises(CommandError, match=r"at least 1 \(got 0\)"):
        call_command("detect", str(corpus_file), detector="rules", out=str(tmp_path / "x"), workers=0)
