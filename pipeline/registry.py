"""Detectors by versioned name, built from a config dict.

A dict and a decorator are enough for a handful of detectors (spaCy's ``registry`` is more than we
need). Built-in detectors live in modules that are imported only when first asked for, so building
``rules`` never pays for torch or spaCy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from pipeline.types import Detector

Factory = Callable[[Mapping[str, Any]], Detector]

_FACTORIES: dict[str, Factory] = {}
_DESCRIPTIONS: dict[str, str] = {}

# name -> module that registers it on import
BUILTIN_MODULES: dict[str, str] = {
    "rules": "pipeline.detectors.rules",
    "presidio": "pipeline.detectors.presidio",
    "math_segments": "pipeline.detectors.segments",
    "llm": "pipeline.detectors.llm",
    "ensemble": "pipeline.detectors.ensemble",
    "tagger": "pipeline.detectors.tagger",
    "speakers": "pipeline.detectors.speakers",
}


class UnknownDetectorError(KeyError):
    def __str__(self) -> str:
        return f"unknown detector {self.args[0]!r}; available: {', '.join(available())}"


def register(name: str, description: str = "") -> Callable[[Factory], Factory]:
    def decorator(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        _DESCRIPTIONS[name] = description or (factory.__doc__ or "").strip().split("\n")[0]
        return factory

    return decorator


def _load(name: str) -> Factory:
    if name not in _FACTORIES and name in BUILTIN_MODULES:
        importlib.import_module(BUILTIN_MODULES[name])
    try:
        return _FACTORIES[name]
    except KeyError:
        raise UnknownDetectorError(name) from None


def build(name: str, config: Mapping[str, Any] | None = None) -> Detector:
    """Build detector ``name`` from ``config`` (unknown keys are an error in each factory)."""
    return _load(name)(dict(config or {}))


def available() -> list[str]:
    """Every registered or built-in detector name, whether or not its module is importable."""
    return sorted(set(BUILTIN_MODULES) | set(_FACTORIES))


def describe(name: str) -> str:
    _load(name)
    return _DESCRIPTIONS.get(name, "")
