"""The tagger's ONNX Runtime backend: export at the end of training, verification against torch
(a disagreeing graph is refused), the registry record, and the same spans as torch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pipeline.registry import build
from pipeline.types import Dialogue, Message, Span

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")


def _msg(text: str, *spans: tuple[str, str], role: str = "tutor", index: int = 0) -> Message:
    out = []
    for piece, label in spans:
        start = text.index(piece)
        out.append(Span(start, start + len(piece), label))
    return Message(text=text, speaker=role, role=role, index=index, spans=tuple(out))


def _dialogues() -> list[Dialogue]:
    names = ["Maria", "Tom", "Ana", "Luis", "Priya", "Chen"]
    out = []
    for k in range(8):
        a, b = names[k % 6], names[(k + 1) % 6]
        msgs = [
            _msg(f"Hi {a}! I'm Mr. {b}.", (a, "NAME"), (b, "NAME")),
            _msg(f"hi mr {b.lower()}", (b.lower(), "NAME"), role="student"),
            _msg("What is 3/4 of 12?"),
            _msg("9", role="student"),
            _msg(f"good job {a.lower()}, call me at 555-123-4567", (a.lower(), "NAME")),
        ]
        msgs = [Message(m.text, m.speaker, m.role, i, None, m.spans, m.meta) for i, m in enumerate(msgs)]
        out.append(Dialogue(id=f"t{k}", messages=tuple(msgs), anchor="Maria buys 12 apples."))
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 1-layer tagger trained for one epoch; training ends with the ONNX export step."""
    from pipeline.tagger import TrainConfig, train_tagger

    root = tmp_path_factory.mktemp("models")
    info = train_tagger(TrainConfig(_dialogues(), name="tiny", out_dir=root, epochs=1, num_layers=1, seed=1,
                        dev_fraction=0.25, check_precision=False))
    return info


def test_training_exports_verified_onnx_files_recorded_in_the_registry(trained):
    from pipeline.hashing import sha256_file
    from pipeline.tagger import read_info
    from pipeline.tagger.onnx_export import ONNX_FILES

    info = read_info(trained.path)
    assert info.version == trained.version  # the weights are untouched: same version
    meta = json.loads((Path(info.path) / "tagger.json").read_text())["onnx"]
    for precision in ("fp32", "int8"):
        entry = info.onnx[precision]
        assert entry["verified"] is True and entry == meta[precision]
        assert entry["file"] == ONNX_FILES[precision]
        assert sha256_file(Path(info.path) / entry["file"]) == entry["sha256"]
        assert entry["sample"] == {"dialogues": 40, "given": True, "generated": 38}  # dev, topped up
    check = info.onnx["fp32"]["verification"]
    assert check["max_abs_diff"] <= 1e-3 and check["argmax_agreement"] == 1.0
    assert info.onnx["int8"]["verification"]["f1_drop"] <= 0.01


def test_onnx_backend_gives_the_same_spans_as_torch(trained):
    from pipeline.tagger import load_model
    from pipeline.tagger.backends import load_tagger

    dialogues = _dialogues()
    torch_model = load_model(trained.path, precision="fp32")
    onnx_model = load_tagger(trained.path, precision="fp32", backend="onnx")
    assert type(onnx_model).__name__ == "OnnxTaggerModel"
    for a, b in zip(torch_model.predict(dialogues), onnx_model.predict(dialogues), strict=True):
        for ma, mb in zip(a, b, strict=True):
            np.testing.assert_allclose(mb.probs, ma.probs, atol=1e-4)
    config = {"model_path": trained.path, "precision": "fp32"}
    by_torch = list(build("tagger", config | {"backend": "torch"}).detect_many(dialogues))
    det = build("tagger", config | {"backend": "onnx"})
    assert det.model_version == f"{trained.full_version}+onnx"
    by_onnx = list(det.detect_many(dialogues))

    def calls(runs):
        return [[(d.dialogue_id, d.index, [(s.start, s.end, s.label) for s in d.spans]) for d in dets]
                for dets in runs]

    def numbers(runs):
        """Span scores and decision margins: float32 graphs agree to rounding, not to the bit."""
        return [x for dets in runs for d in dets for x in [*(s.score for s in d.spans), d.margin]]

    assert calls(by_onnx) == calls(by_torch)
    assert numbers(by_onnx) == pytest.approx(numbers(by_torch), abs=1e-4)
    assert all(d.margin is not None for dets in by_onnx for d in dets)  # uncertainty plans work on ONNX
    assert any(d.spans for dets in by_torch for d in dets)  # the comparison is not vacuous
    auto = build("tagger", {"model_path": trained.path})
    assert auto.runtime == ("onnx", "int8") or auto.runtime[1] == "bf16"
    if auto.runtime[0] == "onnx":
        assert auto.model_version == f"{trained.full_version}+onnx-int8"
        assert len(list(auto.detect_many(dialogues))) == len(dialogues)


def test_a_disagreeing_export_is_refused_and_leaves_nothing(trained, tmp_path, monkeypatch):
    import shutil

    import onnx
    from onnx import numpy_helper

    from pipeline.tagger import read_info
    from pipeline.tagger.onnx_export import OnnxVerificationError, _export_fp32, export_onnx

    copy = tmp_path / "tiny" / trained.version
    shutil.copytree(trained.path, copy)
    num_tags = read_info(copy).label_map.num_tags

    def tampered(path, info, out):
        """The real export, then the classifier bias shifted (as a corrupted or swapped file)."""
        _export_fp32(path, info, out)
        model = onnx.load(str(out))
        for init in model.graph.initializer:
            arr = numpy_helper.to_array(init)
            if arr.shape == (num_tags,):
                init.CopyFrom(numpy_helper.from_array(arr + np.eye(num_tags, dtype=arr.dtype)[1] * 8, init.name))
        onnx.save(model, str(out))

    monkeypatch.setattr("pipeline.tagger.onnx_export._export_fp32", tampered)
    before = read_info(copy).onnx
    with pytest.raises(OnnxVerificationError, match="disagrees with torch"):
        export_onnx(copy, dialogues=_dialogues()[:2], precisions=("fp32",))
    assert read_info(copy).onnx == before  # the record still names the old, verified files
    assert not (copy / "model.raw.onnx").exists()


def test_a_file_changed_after_verification_is_refused_at_load(trained, tmp_path):
    import shutil

    from pipeline.tagger.onnx_export import OnnxVerificationError, load_onnx_model

    copy = tmp_path / "tiny" / trained.version
    shutil.copytree(trained.path, copy)
    with open(copy / "model.int8.onnx", "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(OnnxVerificationError, match="hash"):
        load_onnx_model(copy, precision="int8")
    det = build("tagger", {"model_path": str(copy), "backend": "onnx"})
    with pytest.raises(Exception, match="hash"):
        det.detect(_dialogues()[0])


def test_an_int8_graph_that_loses_too_much_is_left_out_and_the_version_stays_usable(trained, tmp_path, monkeypatch):
    """Quantisation is an optional speed-up: when int8 misses its tolerance on a model (the demo's
    did once, F1 drop 0.017), the int8 file is dropped and noted, fp32 stays verified, and the
    version may still become active and runs on torch or fp32 ONNX."""
    import shutil

    from pipeline.tagger import read_info
    from pipeline.tagger.backends import candidates, choose_backend
    from pipeline.tagger.onnx_export import export_after_training
    from pipeline.tagger.store import activation_blockers

    copy = tmp_path / "tiny" / trained.version
    shutil.copytree(trained.path, copy)
    monkeypatch.setattr("pipeline.tagger.onnx_export.INT8_MAX_F1_DROP", -1.0)  # every int8 graph fails
    messages = []
    info = export_after_training(read_info(copy), _dialogues()[:2], lambda done, total, msg: messages.append(msg))
    assert info.onnx["fp32"]["verified"] is True
    assert info.onnx["int8"] == {"verified": False, "error": info.onnx["int8"]["error"]}
    assert "F1 drop" in info.onnx["int8"]["error"] and not (copy / "model.int8.onnx").exists()
    assert any("ONNX int8 left out" in m for m in messages) and messages[-1].endswith("verified ONNX fp32")
    assert activation_blockers(info) == []
    assert "onnx-int8" not in [c.name for c in candidates(info)]
    assert choose_backend(info, "onnx", "fp32") == ("onnx", "fp32")
    assert build("tagger", {"model_path": str(copy), "backend": "onnx", "precision": "fp32"}).detect(_dialogues()[0])


def test_an_int8_message_gets_the_same_probabilities_alone_as_among_others(trained):
    """The int8 graph quantises each pass's input with one scale: run one window a pass, a
    message's probabilities (so its spans) depend on its own window, never on the dialogues that
    share its chunk, whatever their order."""
    from pipeline.tagger.backends import load_tagger

    model = load_tagger(trained.path, precision="int8", backend="onnx")
    dialogues = _dialogues()
    together = model.predict(dialogues)
    reordered = model.predict(dialogues[::-1])[::-1]
    for k, dialogue in enumerate(dialogues):
        alone = model.predict([dialogue])[0]
        for a, b, c in zip(alone, together[k], reordered[k], strict=True):
            assert np.array_equal(a.probs, b.probs) and np.array_equal(a.probs, c.probs)


def test_the_detector_runs_each_runtime_at_its_own_windows_per_pass(trained, monkeypatch):
    from pipeline.detectors.base import ConfigError
    from pipeline.tagger import model as tagger_model

    sizes = []
    batches = tagger_model.length_batches
    monkeypatch.setattr(tagger_model, "length_batches", lambda windows, size, **kw: sizes.append(size)
                        or batches(windows, size, **kw))
    config = {"model_path": str(trained.path), "precision": "int8"}
    for backend, asked, used in [("onnx", None, 1), ("torch", None, tagger_model.BATCH_SIZE), ("onnx", 8, 8)]:
        sizes.clear()
        list(build("tagger", config | {"backend": backend, "batch_size": asked}).detect_many(_dialogues()))
        assert set(sizes) == {used}
    for bad in (0, -1, "16", True, 2.5):
        with pytest.raises(ConfigError, match="'batch_size' must be a positive integer"):
            build("tagger", config | {"batch_size": bad})


def test_auto_measures_the_verified_runtimes_once_and_runs_the_cheapest(trained):
    from pipeline.tagger import read_info
    from pipeline.tagger.backends import cached_choice, candidates, choice_file, reference_cost

    info = read_info(trained.path)
    det = build("tagger", {"model_path": str(trained.path)})
    backend, precision = det.runtime  # measured here, on this machine
    chosen = cached_choice(info)
    assert chosen["name"] == f"{backend}-{precision}" and chosen["candidates"] == [c.name for c in candidates(info)]
    assert {t["name"] for t in chosen["timings"]} == set(chosen["candidates"])
    cheapest = min(chosen["timings"], key=reference_cost)
    assert cheapest["name"] == chosen["name"] and chosen["reason"].startswith(f"{chosen['name']} ")
    # each backend's start-up timed in a fresh interpreter: torch's imports cost more than ONNX Runtime's
    startups = {t["name"].split("-")[0]: t["startup_seconds"] for t in chosen["timings"]}
    assert all(s and s > 0 for s in startups.values()) and startups["torch"] > startups["onnx"]
    assert choice_file(info).parent == Path(trained.path).parent  # beside the version, not in it
    assert det.detect(_dialogues()[0]) and (getattr(det.model, "backend", "torch") == backend)


def test_a_re_export_makes_the_measured_runtime_stale(trained, tmp_path):
    """Another graph runs at another speed: the choice measured for the old files is not reused."""
    import shutil

    from pipeline.tagger import read_info
    from pipeline.tagger.backends import cached_choice, measured_choice
    from pipeline.tagger.store import update_info

    copy = tmp_path / "tiny" / Path(trained.path).name
    shutil.copytree(trained.path, copy)
    info = read_info(copy)
    measured_choice(info, startup=lambda path, candidate: 0.1)
    assert cached_choice(info) is not None
    onnx = dict(info.onnx)
    onnx["int8"] = {**onnx["int8"], "sha256": "0" * 64}  # what a re-export records
    assert cached_choice(update_info(copy, onnx=onnx)) is None
    assert cached_choice(update_info(copy, onnx=info.onnx)) is not None  # the files it measured


def test_the_fast_tokenizer_file_gives_the_same_windows_as_transformers(trained):
    from transformers import AutoTokenizer

    from pipeline.tagger.encoding import WindowEncoder
    from pipeline.tagger.onnx_export import FastTokenizer, load_onnx_model
    from pipeline.text import tokenize

    model = load_onnx_model(trained.path, precision="fp32")
    assert isinstance(model.tokenizer, FastTokenizer)
    hf = AutoTokenizer.from_pretrained(str(trained.path))
    assert model.pad_id == hf.pad_token_id
    dialogues = _dialogues() + [Dialogue("long", (Message("Mr. Okafor-Smith's e-mail: ana@x.org " * 60, "tutor", "tutor", 0),))]
    words = [[tokenize(m.text) for m in d.messages] for d in dialogues]
    ours = model.encoder.encode_many(dialogues, words)
    theirs = WindowEncoder(hf, model.label_map, model.window).encode_many(dialogues, words)
    assert [[(w.input_ids, w.token_type_ids, w.words, w.positions) for w in ws] for ws in ours] == [
        [(w.input_ids, w.token_type_ids, w.words, w.positions) for w in ws] for ws in theirs
    ]


def test_the_onnx_backend_detects_without_importing_torch_or_transformers(trained):
    import subprocess
    import sys

    code = (
        "import sys, pipeline.detectors\n"
        "from pipeline.registry import build\n"
        "from pipeline.types import Dialogue, Message\n"
        f"det = build('tagger', {{'model_path': {str(trained.path)!r}, 'backend': 'onnx'}})\n"
        "found = list(det.detect_many([Dialogue('d', (Message('hi Maria, 3/4 of 12', 'tutor', 'tutor', 0),))]))\n"
        "assert len(found) == 1, found\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_residual_adds_stay_apart_from_their_layer_norms_in_the_file_and_the_session(trained, tmp_path, monkeypatch,
                                                                                   precision):
    """ONNX Runtime's SkipLayerNormalization kernel is the slow way to run an add and a layer norm:
    the export leaves them apart and a session does not fuse them again when it starts."""
    import onnx

    from pipeline.tagger import onnx_export

    file = Path(trained.path) / onnx_export.ONNX_FILES[precision]
    exported = {n.op_type for n in onnx.load(str(file)).graph.node}
    assert "LayerNormalization" in exported and "SkipLayerNormalization" not in exported
    assert "QAttention" in exported if precision == "int8" else "Attention" in exported  # still fused

    dumped = tmp_path / "session.onnx"
    options = onnx_export.session_options

    def dumping(threads=None):
        opts = options(threads)
        opts.optimized_model_filepath = str(dumped)
        return opts

    monkeypatch.setattr(onnx_export, "session_options", dumping)
    tagger = onnx_export.load_onnx_model(trained.path, precision=precision)
    running = {n.op_type for n in onnx.load(str(dumped)).graph.node}
    assert "LayerNormalization" in running and "SkipLayerNormalization" not in running
    assert tagger.tag(_dialogues()[:1])  # and it still tags
