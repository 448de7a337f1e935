"""The tagger in ONNX Runtime: export, verification against torch, and an inference backend.

A saved version's fp32 torch weights are exported with ``torch.onnx`` (dynamic batch and
sequence axes, softmax inside the graph), fused with ONNX Runtime's transformer optimiser
(attention, the embeddings' layer norm, GELU; never a residual add into its layer norm:
:data:`UNFUSED`) and, for ``int8``, dynamically quantised with
``onnxruntime.quantization`` (weights per channel, the classification head left in float).

Each file is verified before it is registered: the tagger's word probabilities on a sample of
encoded windows are compared with torch's (fp32: largest absolute difference and argmax
agreement; int8: argmax agreement, and exact-span F1 on the sample's gold no worse than fp32's
by more than a tolerance beyond the sample's noise: a paired bootstrap over dialogues). A file
that disagrees is deleted and :class:`OnnxVerificationError` raised, so an unverified graph never
sits in the registry. What passed is recorded in ``tagger.json`` under ``onnx``.

    from pipeline.tagger.onnx_export import export_onnx, load_onnx_model
    info = export_onnx("var/models/demo/<version>")       # model.onnx, model.int8.onnx
    tagger = load_onnx_model(info.path, precision="int8")  # same API as TaggerModel
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.hashing import sha256_file
from pipeline.parallel import cpu_threads
from pipeline.tagger.encoding import Window, WindowConfig
from pipeline.tagger.model import (
    TaggerModel,
    TaggerUnavailableError,
    collate,
    import_torch,
    offline_env,
)
from pipeline.tagger.store import ModelInfo, read_info, update_info
from pipeline.types import Dialogue

ONNX_PRECISIONS = ("fp32", "int8")
ONNX_FILES = {"fp32": "model.onnx", "int8": "model.int8.onnx"}
OPSET = 17
# fp32 must match torch to float noise; int8 may move a few borderline words but not the spans
FP32_MAX_ABS_DIFF = 1e-3
FP32_MIN_AGREEMENT = 0.999
INT8_MIN_AGREEMENT = 0.98
INT8_MAX_F1_DROP = 0.01  # the tolerance; int8 fails when it is exceeded beyond the sample's noise
SAMPLE_SEED = 2027  # generated verification dialogues: never the demo corpus's seed (7)
# the whole dev set is verified, topped up with generated dialogues to at least this many: a
# student's dev is its teacher's 10 dialogues, on which one word moves F1 by about 0.01
MIN_SAMPLE_DIALOGUES = 40
# Fusions left out, in the export and at session start (ONNX Runtime re-fuses what the file left
# apart): its SkipLayerNormalization kernel costs several times the Add and LayerNormalization it
# replaces, for the same probabilities (figures in docs/benchmarks.md, "Speed")
UNFUSED = ("SkipLayerNormFusion",)
UNFUSED_METHOD = "no skip layer norm"  # how the export's ``method`` record says it left them apart

Progress = Callable[[int, int, str], None]


class OnnxVerificationError(RuntimeError):
    """The exported graph's outputs disagree with the torch model's: it is not registered."""


def import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise TaggerUnavailableError("the onnx backend needs onnxruntime") from exc
    return onnxruntime


# --- inference -------------------------------------------------------------------------------


class OnnxTaggerModel(TaggerModel):
    """A :class:`TaggerModel` whose forward pass is an ONNX Runtime session."""

    # One window per forward pass. The int8 graph quantises each MatMul's input with one scale
    # taken from the whole batch, so in batches a message's spans depended on the windows it
    # shared a pass with (3-14 % of spans changed with the order of the same dialogues); alone,
    # they depend on its own window only. It is also cheaper: no padding, and ONNX Runtime's cost
    # per pass is small (on real text about 9 % fewer CPU-seconds than 16 windows a pass).
    batch_size = 1

    def __init__(self, session: Any, *args: Any, precision: str = "fp32", **kwargs: Any) -> None:
        super().__init__(session, *args, **kwargs)
        self.precision = precision
        self.backend = "onnx"
        self._inputs = {i.name for i in session.get_inputs()}

    def set_precision(self, precision: str) -> TaggerModel:
        if precision != self.precision:
            raise ValueError("an ONNX model's precision is fixed by its file; load the other one")
        return self

    def inference(self) -> AbstractContextManager:
        return nullcontext()  # the session holds its threads; no torch here

    def collated(self, windows: Sequence[Window]) -> dict:
        batch = collate(None, windows, self.pad_id, with_labels=False)
        return {k: v for k, v in batch.items() if k in self._inputs}

    def forward_probs(self, batch: dict) -> np.ndarray:
        feed = {k: v if isinstance(v, np.ndarray) else v.numpy() for k, v in batch.items() if k in self._inputs}
        return self.model.run(["probs"], feed)[0]


class FastTokenizer:
    """A saved version's ``tokenizer.json`` through the ``tokenizers`` library alone.

    It answers the calls inference makes of a Hugging Face fast tokenizer (ids and offsets of
    texts without special tokens, the special tokens around a window, the pad id) with the same
    ids, without importing transformers, which imports torch: a ``detect`` worker on the ONNX
    backend starts in a fraction of the CPU time (bench/detect_speed_bench.py).
    """

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer

        path = Path(path)
        self._tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tok.no_padding()
        self._tok.no_truncation()
        self._specials = self._tok.encode("", add_special_tokens=True).ids
        special = json.loads((path / "special_tokens_map.json").read_text(encoding="utf-8"))
        pad = special.get("pad_token")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        self.pad_token_id = self._tok.token_to_id(pad) if pad else None

    def build_inputs_with_special_tokens(self, ids: Sequence[int]) -> list[int]:
        return [*self._specials[:1], *ids, *self._specials[1:]]

    def __call__(self, text: str | Sequence[str], *, add_special_tokens: bool = True,
                 return_offsets_mapping: bool = False) -> dict[str, Any]:
        single = isinstance(text, str)
        encoded = self._tok.encode_batch([text] if single else list(text), add_special_tokens=add_special_tokens)
        out: dict[str, Any] = {"input_ids": [e.ids for e in encoded]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e.offsets for e in encoded]
        return {k: v[0] for k, v in out.items()} if single else out


def session_options(threads: int | None = None) -> Any:
    ort = import_ort()
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = threads or cpu_threads()
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # idle threads sleep instead of spinning: on shared cores a spinning thread burns CPU that
    # another worker (or tenant) needs
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def _session(file: str | Path, threads: int | None = None) -> Any:
    ort = import_ort()
    return ort.InferenceSession(
        str(file), sess_options=session_options(threads), providers=["CPUExecutionProvider"],
        disabled_optimizers=list(UNFUSED),
    )


def _tokenizer(path: str | Path) -> Any:
    """The version's fast tokenizer file on its own where it has one and a single-token
    ``[CLS] … [SEP]`` frame (every BERT-style base; checked against transformers in the tests),
    else transformers' ``AutoTokenizer``."""
    if (Path(path) / "tokenizer.json").is_file() and (Path(path) / "special_tokens_map.json").is_file():
        fast = FastTokenizer(path)
        if len(fast.build_inputs_with_special_tokens([])) == 2 and fast.pad_token_id is not None:
            return fast
    offline_env()
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    return AutoTokenizer.from_pretrained(str(path))


def _onnx_tagger(info: ModelInfo, file: Path, precision: str, tokenizer: Any, threads: int | None = None):
    return OnnxTaggerModel(
        _session(file, threads),
        tokenizer,
        info.label_map,
        WindowConfig.from_dict(info.window),
        thresholds=info.thresholds,
        use_token_types=info.use_token_types,
        info=info,
        precision=precision,
    )


def onnx_available(info: ModelInfo, precision: str) -> bool:
    """Whether this version has a verified ONNX file for ``precision`` that is still intact."""
    entry = (info.onnx or {}).get(precision) or {}
    return bool(entry.get("verified")) and (Path(info.path) / entry.get("file", "-")).is_file()


def outdated_export(info: ModelInfo) -> str:
    """Why this version's ONNX files are slower than a re-export would be (empty when they are
    not): files exported before :data:`UNFUSED` fused what a session now leaves apart, and a
    session cannot take a fusion out of a file. The version still runs; re-exporting it keeps its
    weights and verifies the new files as training does."""
    onnx = info.onnx or {}
    exported = any(isinstance(onnx.get(p), dict) and onnx[p].get("verified") for p in ONNX_PRECISIONS)
    if not exported or UNFUSED_METHOD in str(onnx.get("method", "")):
        return ""
    return (f"its ONNX files predate the faster graph (fusions now left out: {', '.join(UNFUSED)}); "
            f"`manage.py train_tagger --export-only {info.full_version}` re-exports them")


def load_onnx_model(path: str | Path, *, precision: str = "int8", threads: int | None = None) -> OnnxTaggerModel:
    """Load a version's verified ONNX file; refuses a file whose hash is not the one verified."""
    if precision not in ONNX_PRECISIONS:
        raise ValueError(f"onnx precision must be one of {', '.join(ONNX_PRECISIONS)}")
    info = read_info(path)
    entry = (info.onnx or {}).get(precision)
    if not entry or not entry.get("verified"):
        raise FileNotFoundError(f"{path}: no verified {precision} ONNX export (run export_tagger)")
    file = Path(path) / entry["file"]
    if sha256_file(file) != entry["sha256"]:
        raise OnnxVerificationError(f"{file} is not the file that was verified (hash differs)")
    return _onnx_tagger(info, file, precision, _tokenizer(path), threads)


# --- export ----------------------------------------------------------------------------------


def _probs_module(torch: Any, model: Any, use_types: bool) -> Any:
    class Probs(torch.nn.Module):
        """The token classifier with its softmax, so ONNX Runtime returns probabilities."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kw = {"token_type_ids": token_type_ids} if use_types else {}
            logits = self.model(input_ids=input_ids, attention_mask=attention_mask, **kw).logits
            return torch.softmax(logits.float(), dim=-1)

    return Probs().eval()


def _export_fp32(path: Path, info: ModelInfo, out: Path) -> None:
    """torch → ONNX (eager attention, so ONNX Runtime's optimiser recognises it), then fused."""
    torch = import_torch()
    offline_env()
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(str(path), attn_implementation="eager")
    model.eval()
    module = _probs_module(torch, model, info.use_token_types)
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if info.use_token_types else [])
    ids = torch.full((2, 16), 101, dtype=torch.long)
    args = (ids, torch.ones_like(ids)) + ((torch.zeros_like(ids),) if info.use_token_types else ())
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"probs": {0: "batch", 1: "sequence"}}
    raw = out.with_suffix(".raw.onnx")
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the TorchScript exporter: fine here
        torch.onnx.export(
            module, args, str(raw), input_names=names, output_names=["probs"],
            dynamic_axes=axes, opset_version=OPSET, dynamo=False, do_constant_folding=True,
        )
    try:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        cfg = model.config
        fusions = FusionOptions("bert")
        fusions.enable_skip_layer_norm = False  # UNFUSED
        fused = optimize_model(
            str(raw), model_type="bert", num_heads=int(cfg.num_attention_heads),
            hidden_size=int(cfg.hidden_size), opt_level=0, optimization_options=fusions,
        )
        fused.save_model_to_file(str(out))
    finally:
        raw.unlink(missing_ok=True)


def _quantize(src: Path, out: Path) -> None:
    """Dynamic int8 over the encoder's MatMuls and fused attention (its QKV projection, a quarter
    of each layer's multiply-adds; ``QAttention``), weights per channel; the head stays in float."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(src), load_external_data=False).graph
    head = [n.name for n in graph.node if "classifier" in n.name or any("classifier" in i for i in n.input)]
    quantize_dynamic(
        str(src), str(out), per_channel=True, weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul", "Gemm", "Attention"], nodes_to_exclude=head,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # fused ops: no shape info
    )


def sample_dialogues(n: int = MIN_SAMPLE_DIALOGUES) -> list[Dialogue]:
    """``n`` generated dialogues with gold spans (seed never the demo's): the verification sample
    of an export without dev dialogues, and the top-up of a small dev set."""
    from pipeline.synthetic import generate_corpus

    return generate_corpus(n, SAMPLE_SEED, id_prefix="onnx-check")


def compare(reference: TaggerModel, candidate: TaggerModel, dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    """Word-level agreement of two taggers on ``dialogues`` (the probabilities decoding uses),
    exact-span F1 of each against the gold spans (strict thresholds, no post-filter), and the
    paired bootstrap test of the candidate's F1 drop against ``INT8_MAX_F1_DROP``. Each predicts
    with its own windows per pass, so the candidate is checked as a detector runs it."""
    from pipeline.metrics.bootstrap import paired_drop_test
    from pipeline.tagger.scoring import dialogue_counts, span_scores

    ref, cand = reference.predict(dialogues), candidate.predict(dialogues)
    a = np.concatenate([m.probs for d in ref for m in d] or [np.zeros((0, 1))])
    b = np.concatenate([m.probs for d in cand for m in d] or [np.zeros((0, 1))])
    known = set(reference.label_map.labels)
    gold, pred_ref, pred_cand = [], [], []
    for d, dr, dc in zip(dialogues, ref, cand, strict=True):
        for m, mr, mc in zip(d.messages, dr, dc, strict=True):
            gold.append([s for s in m.spans if s.label in known])
            pred_ref.append(reference.to_spans(m.text, mr, {}))
            pred_cand.append(candidate.to_spans(m.text, mc, {}))
    f_ref = span_scores(gold, pred_ref)["f1"]
    f_cand = span_scores(gold, pred_cand)["f1"]
    counts = dialogue_counts(gold, pred_ref, pred_cand, sizes=[len(d.messages) for d in dialogues])
    return {
        "words": int(len(a)),
        "max_abs_diff": float(np.abs(a - b).max()) if len(a) else 0.0,
        "mean_abs_diff": float(np.abs(a - b).mean()) if len(a) else 0.0,
        "argmax_agreement": float((a.argmax(1) == b.argmax(1)).mean()) if len(a) else 1.0,
        "same_spans": float(np.mean([p == q for p, q in zip(pred_ref, pred_cand, strict=True)] or [1.0])),
        "f1_torch": round(float(f_ref), 4),
        "f1": round(float(f_cand), 4),
        "f1_drop": round(float(f_ref - f_cand), 4),
        "f1_drop_test": paired_drop_test(counts, tolerance=INT8_MAX_F1_DROP),
    }


def check_verification(precision: str, report: dict[str, Any]) -> None:
    """Raise :class:`OnnxVerificationError` when ``report`` breaks ``precision``'s tolerances."""
    problems = []
    if precision == "fp32":
        if report["max_abs_diff"] > FP32_MAX_ABS_DIFF:
            problems.append(f"max |p_onnx - p_torch| {report['max_abs_diff']:.2g} > {FP32_MAX_ABS_DIFF}")
        if report["argmax_agreement"] < FP32_MIN_AGREEMENT:
            problems.append(f"argmax agreement {report['argmax_agreement']:.4f} < {FP32_MIN_AGREEMENT}")
    else:
        if report["argmax_agreement"] < INT8_MIN_AGREEMENT:
            problems.append(f"argmax agreement {report['argmax_agreement']:.4f} < {INT8_MIN_AGREEMENT}")
        test = report["f1_drop_test"]
        if not test["passed"]:
            problems.append(
                f"F1 drop {test['drop']:.4f} > {test['tolerance']} by more than {test['z']:g} standard errors "
                f"({test['se']:.4f}, paired bootstrap over {test['dialogues']} dialogues)"
            )
    if problems:
        raise OnnxVerificationError(f"ONNX {precision} export disagrees with torch: " + "; ".join(problems))


def export_onnx(
    path: str | Path,
    *,
    dialogues: Sequence[Dialogue] | None = None,
    precisions: Sequence[str] = ONNX_PRECISIONS,
    progress: Progress | None = None,
) -> ModelInfo:
    """Export a saved version to ONNX beside its torch weights, verify, and record it.

    ``dialogues`` (the training run's dev set, or any gold dialogues) are the verification
    sample; without them a small generated one is used. Raises :class:`OnnxVerificationError`
    (and leaves no file behind) when a graph disagrees with torch.
    """
    from pipeline.tagger.store import load_model

    path = Path(path)
    report = progress or (lambda done, total, message: None)
    info = read_info(path)
    sample = verification_sample(dialogues)
    torch_model = load_model(path, precision="fp32")
    fp32_file = path / ONNX_FILES["fp32"]
    records: dict[str, Any] = {}
    steps = len(precisions) + 1
    created: list[Path] = []
    try:
        report(0, steps, "exporting to ONNX")
        t0 = time.perf_counter()
        _export_fp32(path, info, fp32_file)
        created.append(fp32_file)
        export_seconds = time.perf_counter() - t0
        for k, precision in enumerate(precisions, start=1):
            try:
                records[precision] = _verified_precision(
                    path, info, precision, torch_model, sample, created, lambda m, k=k: report(k, steps, m)
                )
            except OnnxVerificationError as exc:
                if precision == "fp32":
                    raise  # the graph itself disagrees with the weights: nothing is registered
                # Quantisation lost too much on this model: int8 is an optional speed-up, so it is
                # left out and noted; the version runs on torch or the verified fp32 graph.
                (path / ONNX_FILES[precision]).unlink(missing_ok=True)
                records[precision] = {"verified": False, "error": str(exc)}
                report(k, steps, f"ONNX {precision} left out: {exc}")
                continue
            records[precision]["sample"] = {"dialogues": len(sample), "given": dialogues is not None,
                                            "generated": len(sample) - len([d for d in dialogues or () if d.messages])}
    except BaseException:
        for file in created:
            file.unlink(missing_ok=True)
        raise
    if "fp32" not in precisions:
        fp32_file.unlink(missing_ok=True)
    saved = update_info(path, onnx=_onnx_meta(records, export_seconds))
    report(steps, steps, "ONNX export verified")
    return saved


def verification_sample(dialogues: Sequence[Dialogue] | None) -> list[Dialogue]:
    """Every dialogue with messages among ``dialogues``, topped up with generated ones to
    ``MIN_SAMPLE_DIALOGUES``: the fewer the dialogues, the wider the noise the int8 test allows."""
    sample = [d for d in dialogues or () if d.messages]
    if len(sample) < MIN_SAMPLE_DIALOGUES:
        sample += sample_dialogues(MIN_SAMPLE_DIALOGUES - len(sample))
    return sample


def _verified_precision(
    path: Path,
    info: ModelInfo,
    precision: str,
    torch_model: Any,
    sample: list[Dialogue],
    created: list[Path],
    report: Callable[[str], None],
) -> dict[str, Any]:
    """One precision's graph (quantised from fp32 for int8, noted in ``created``), checked
    against torch on ``sample``; its record for the model info. Raises when they disagree."""
    if precision not in ONNX_PRECISIONS:
        raise ValueError(f"onnx precision must be one of {', '.join(ONNX_PRECISIONS)}")
    file = path / ONNX_FILES[precision]
    if precision == "int8":
        report("quantising the ONNX graph to int8")
        _quantize(path / ONNX_FILES["fp32"], file)
        created.append(file)
    report(f"verifying ONNX {precision} against torch")
    candidate = _onnx_tagger(info, file, precision, torch_model.tokenizer)
    t0 = time.perf_counter()
    check = compare(torch_model, candidate, sample)
    check["seconds"] = round(time.perf_counter() - t0, 2)
    check_verification(precision, check)
    return {
        "file": file.name,
        "sha256": sha256_file(file),
        "bytes": file.stat().st_size,
        "verified": True,
        "verification": check,
    }


def _onnx_meta(records: dict[str, Any], export_seconds: float) -> dict[str, Any]:
    """The ``onnx`` entry of the model info: each precision's record, how it was made, the
    tolerances it passed and the software versions."""
    import onnxruntime

    return {
        **records,
        "opset": OPSET,
        "export_seconds": round(export_seconds, 1),
        "method": f"torch.onnx.export (TorchScript) + onnxruntime.transformers.optimizer (bert, {UNFUSED_METHOD}); "
        "int8: onnxruntime.quantization.quantize_dynamic (MatMul + Attention, QInt8 per channel, head in float)",
        "tolerances": {
            "fp32": {"max_abs_diff": FP32_MAX_ABS_DIFF, "argmax_agreement": FP32_MIN_AGREEMENT},
            "int8": {"argmax_agreement": INT8_MIN_AGREEMENT, "f1_drop": INT8_MAX_F1_DROP,
                     "f1_drop_rule": "fails when drop - f1_drop > z x se (paired bootstrap over dialogues)"},
        },
        "software": {"onnxruntime": onnxruntime.__version__, "torch": import_torch().__version__},
    }


def export_after_training(
    info: ModelInfo, dev: Sequence[Dialogue], progress: Progress | None = None
) -> ModelInfo:
    """The training run's last step (unless ``TrainConfig.export_onnx`` is off): export and verify
    on its dev set. A disagreeing export is left out and noted, the torch model is kept."""
    report = progress or (lambda done, total, message: None)
    try:
        saved = export_onnx(info.path, dialogues=dev or None, progress=progress)
    except OnnxVerificationError as exc:
        report(1, 1, f"saved {info.full_version}; ONNX export refused: {exc}")
        return update_info(info.path, onnx={"verified": False, "error": str(exc)})
    kept = [p for p in ONNX_PRECISIONS if (saved.onnx.get(p) or {}).get("verified")]
    report(1, 1, f"saved {saved.full_version} with verified ONNX {' and '.join(kept)}")
    return saved
