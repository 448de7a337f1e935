"""``backend: auto`` is measured, not guessed: the verified runtime that spends the least CPU on
this machine, start-up included, is chosen at first load, cached per version and machine, and
re-measured when the machine changes; a runtime that failed its check is never measured."""

from __future__ import annotations

import json

import pytest

from pipeline.tagger import backends, store
from pipeline.tagger.backends import Candidate
from pipeline.tagger.store import ModelInfo
from pipeline.types import Dialogue, Message

DIALOGUE = Dialogue("d", (Message("hi Maria", "tutor", "tutor", 0), Message("hi", "student", "student", 1)))
COST = {"onnx-int8": 0.5, "onnx-fp32": 1.5, "torch-bf16": 0.8, "torch-fp32": 2.0}  # seconds per pass
STARTUP = {"onnx": 0.3, "torch": 3.5}  # CPU-seconds to import the runtime and load the version


@pytest.fixture
def info(tmp_path, monkeypatch):
    """A version with every runtime verified, on a CPU with AVX512-BF16; this process's cache
    emptied so each test reads (or misses) the file."""
    path = tmp_path / "m" / "20260101-000000-abcdef12"
    path.mkdir(parents=True)
    for name in ("model.onnx", "model.int8.onnx"):
        (path / name).write_bytes(b"graph")
    monkeypatch.setattr(backends, "_choices", {})
    monkeypatch.setattr(backends, "cpu_description", lambda: ("Test EPYC", frozenset({"avx2", "avx512_bf16"})))
    monkeypatch.setattr(backends, "native_bf16", lambda: True)
    monkeypatch.setattr(store, "native_bf16", lambda: True)  # an explicit precision is chosen there
    return ModelInfo.from_dict(
        {"name": "m", "version": path.name, "base_model": "x", "scheme": "bio", "labels": ["NAME"],
         "data_hash": "", "created_at": "", "training_seconds": 0,
         "precision_checks": {"bf16": {"keep": True}, "int8": {"keep": False}},
         "onnx": {p: {"verified": True, "file": f} for p, f in (("fp32", "model.onnx"), ("int8", "model.int8.onnx"))}},
        path,
    )


class Clock:
    """A fake timer: a model's pass moves it on by that model's cost."""

    def __init__(self) -> None:
        self.now = 0.0
        self.loaded: list[str] = []

    def __call__(self) -> float:
        return self.now

    def load(self, path: str, candidate: Candidate):
        self.loaded.append(candidate.name)
        clock = self

        class Model:
            def predict(self, dialogues, batch_size=64):
                clock.now += COST[candidate.name]
                return []

        return Model()


def _startup(path, candidate):
    return STARTUP[candidate.backend]


def _choose(info, clock: Clock):
    return backends.measured_choice(info, load=clock.load, timer=clock, dialogues=[DIALOGUE], startup=_startup)


def test_the_fastest_verified_runtime_is_chosen_and_says_why(info, monkeypatch):
    clock = Clock()
    chosen = _choose(info, clock)
    assert clock.loaded == ["onnx-int8", "onnx-fp32", "torch-bf16", "torch-fp32"]  # torch int8 failed its check
    assert (chosen["backend"], chosen["precision"]) == ("onnx", "int8")
    # 2 messages in 0.5 s: 15,000 messages in 3,750 CPU-s, plus 0.3 to start
    assert chosen["reason"].startswith("onnx-int8 3750.3 CPU-s (4 msg/s, starts in 0.3 CPU-s) vs torch-bf16 ")
    assert "per 15,000 messages with start-up" in chosen["reason"]
    assert "Test EPYC (avx2 avx512_bf16)" in chosen["reason"]
    assert backends.choose_backend(info) == ("onnx", "int8")  # this process remembers it

    monkeypatch.setitem(COST, "torch-bf16", 0.1)  # another machine, where torch bf16 is fastest
    monkeypatch.setattr(backends, "_choices", {})
    monkeypatch.setattr(backends, "cpu_description", lambda: ("Test Xeon", frozenset({"avx2", "amx_bf16"})))
    assert _choose(info, Clock())["name"] == "torch-bf16"


def test_the_choice_is_measured_once_per_machine_and_again_on_another(info, monkeypatch):
    first = _choose(info, Clock())
    cached = json.loads(backends.choice_file(info).read_text())
    assert list(cached.values()) == [first] and backends.choice_file(info).name == f".{info.version}.backend.json"

    monkeypatch.setattr(backends, "_choices", {})  # a new process on the same machine: the file
    again = Clock()
    assert _choose(info, again) == first and again.loaded == []
    assert backends.cached_choice(info) == first

    monkeypatch.setattr(backends, "_choices", {})
    monkeypatch.setattr(backends, "cpu_description", lambda: ("Test EPYC", frozenset({"avx2"})))
    other = Clock()
    assert backends.cached_choice(info) is None
    _choose(info, other)
    assert other.loaded and len(json.loads(backends.choice_file(info).read_text())) == 2


def test_a_runtime_that_failed_its_check_is_never_a_candidate(info):
    failed = ModelInfo.from_dict(
        {**info.to_dict(), "precision_checks": {"bf16": {"keep": False}, "int8": {"keep": False}},
         "onnx": {**info.onnx, "int8": {"verified": False, "error": "F1 drop"}}},
        info.path,
    )
    assert backends.candidates(failed) == [Candidate("onnx", "fp32"), Candidate("torch", "fp32")]
    clock = Clock()
    assert _choose(failed, clock)["name"] == "onnx-fp32" and "onnx-int8" not in clock.loaded

    only = ModelInfo.from_dict({**failed.to_dict(), "onnx": {}}, info.path)
    assert backends.measured_choice(only, load=None)["reason"] == "torch-fp32: the only verified runtime"


def test_an_explicit_backend_or_precision_is_not_measured(info, monkeypatch):
    monkeypatch.setattr(backends, "measured_choice", lambda *a, **k: pytest.fail("measured"))
    assert backends.choose_backend(info, "torch", "auto") == ("torch", "bf16")
    assert backends.choose_backend(info, "onnx") == ("onnx", "int8")
    assert backends.choose_backend(info, "auto", "fp32") == ("torch", "fp32")


def test_a_runtime_that_does_not_load_is_skipped_and_said(info):
    clock = Clock()

    def load(path, candidate):
        if candidate.name == "onnx-int8":
            raise RuntimeError("model.int8.onnx is not the file that was verified (hash differs)")
        return clock.load(path, candidate)

    chosen = backends.measured_choice(info, load=load, timer=clock, dialogues=[DIALOGUE], startup=_startup)
    assert chosen["name"] == "torch-bf16" and "onnx-int8 did not load" in chosen["reason"]
    assert {"name": "onnx-int8", "error": "model.int8.onnx is not the file that was verified (hash differs)"} in chosen[
        "timings"]


def test_a_slow_start_outweighs_a_slightly_faster_steady_state(info, monkeypatch):
    """Torch steady 7 % faster but 3.2 CPU-s slower to start: ONNX is the cheaper runtime for a
    worker's share of a command; torch twice as fast wins whatever its start-up."""
    monkeypatch.setattr(backends, "REFERENCE_MESSAGES", 60)  # onnx-int8: 60 / 4 msg/s + 0.3 = 15.3 CPU-s
    monkeypatch.setitem(COST, "torch-bf16", 0.5 / 1.07)
    assert _choose(info, Clock())["name"] == "onnx-int8"

    monkeypatch.setattr(backends, "_choices", {})
    backends.choice_file(info).unlink()
    monkeypatch.setitem(COST, "torch-bf16", 0.25)
    assert _choose(info, Clock())["name"] == "torch-bf16"


def test_a_start_up_that_cannot_be_measured_leaves_the_rate_to_decide(info, monkeypatch):
    """None measured, or one backend's only: never a failed measurement read as a free start."""
    monkeypatch.setattr(backends, "REFERENCE_MESSAGES", 60)
    cases = [
        ({"torch-bf16": 0.4}, lambda path, candidate: None, "torch-bf16"),
        # onnx-int8 fastest (0.5 s a pass) but slow to start; torch's start-up unknown, not free
        ({"torch-bf16": 0.8}, lambda path, candidate: None if candidate.backend == "torch" else 99.0, "onnx-int8"),
    ]
    for costs, startup, expected in cases:
        for name, cost in costs.items():
            monkeypatch.setitem(COST, name, cost)
        monkeypatch.setattr(backends, "_choices", {})
        backends.choice_file(info).unlink(missing_ok=True)
        clock = Clock()
        chosen = backends.measured_choice(info, load=clock.load, timer=clock, dialogues=[DIALOGUE], startup=startup)
        assert chosen["name"] == expected and "starts in" not in chosen["reason"]
        assert "per 60 messages, measured" in chosen["reason"]


def test_a_choice_made_by_the_rate_alone_is_measured_again(info, monkeypatch):
    """A choice cached before start-ups were counted is not trusted: measured again, once."""
    first = _choose(info, Clock())
    key = backends.machine_key(backends.machine())
    old = {key: {k: v for k, v in first.items() if k != "method"}}
    backends.choice_file(info).write_text(json.dumps(old))
    monkeypatch.setattr(backends, "_choices", {})
    assert backends.cached_choice(info) is None
    again = Clock()
    assert _choose(info, again)["method"] == backends.METHOD and again.loaded


def test_the_start_up_is_timed_in_a_fresh_interpreter(tmp_path):
    """The real measurement: a child process's CPU-seconds; a version that does not load gives
    None (the rate then decides) rather than a failure."""
    assert backends.startup_seconds(str(tmp_path / "missing"), Candidate("onnx", "int8")) is None


def test_a_start_up_that_hangs_is_killed_and_not_timed(tmp_path, monkeypatch):
    """A child that never finishes (here: a script that sleeps) is killed at the timeout."""
    monkeypatch.setattr(backends, "STARTUP_TIMEOUT", 0.5)
    monkeypatch.setattr(backends, "_STARTUP", "import time; time.sleep(60)")
    assert backends.startup_seconds(str(tmp_path), Candidate("onnx", "int8")) is None


def test_no_start_up_is_timed_under_a_binary_that_is_no_python(tmp_path, monkeypatch):
    monkeypatch.setattr(backends.sys, "executable", "/usr/local/bin/uwsgi")
    monkeypatch.setattr(backends.subprocess, "Popen", lambda *a, **k: pytest.fail("started"))
    assert backends.startup_seconds(str(tmp_path), Candidate("onnx", "int8")) is None
