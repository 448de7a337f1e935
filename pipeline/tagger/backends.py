"""Which runtime a saved tagger version runs on: torch, or the verified ONNX Runtime export.

It sits above both the registry (:mod:`pipeline.tagger.store`, torch weights) and the exporter
(:mod:`pipeline.tagger.onnx_export`, which loads torch weights to verify against), so neither
imports the other back.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.tagger.model import TaggerModel, amx_bf16
from pipeline.tagger.onnx_export import load_onnx_model, onnx_available
from pipeline.tagger.store import ModelInfo, choose_precision, load_model, read_info

BACKENDS = ("auto", "torch", "onnx")


def choose_backend(info: ModelInfo, requested: str = "auto", precision: str = "auto") -> tuple[str, str]:
    """``(backend, precision)`` to run ``info`` in. ``auto`` with precision ``auto``: the
    verified ONNX int8 file where there is one and the CPU has no AMX for bf16, else torch (a
    precision asked for by name runs in torch); ``onnx`` takes int8 unless fp32 is asked for."""
    if requested not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}")
    if requested == "torch":
        return "torch", choose_precision(info, precision)
    onnx_precision = "fp32" if precision == "fp32" else "int8"
    if requested == "onnx":
        if precision == "bf16":
            raise ValueError("the onnx backend runs fp32 or int8, not bf16")
        return "onnx", onnx_precision
    bf16 = amx_bf16() and info.precision_kept("bf16")
    if precision == "auto" and not bf16 and onnx_available(info, "int8"):
        return "onnx", "int8"
    return "torch", choose_precision(info, precision)


def load_tagger(path: str | Path, *, precision: str = "auto", backend: str = "torch") -> TaggerModel:
    """Load a saved version on ``backend`` (see :func:`choose_backend`) in ``precision``."""
    if backend != "torch":
        backend, precision = choose_backend(read_info(path), backend, precision)
        if backend == "onnx":
            return load_onnx_model(path, precision=precision)
    return load_model(path, precision=precision)
