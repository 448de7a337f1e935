"""Maths, placeholder, anchor, cue, junk and name filters and the Presidio entity policies, each
written once and registered by name.

A filter is a plain predicate ("is this range maths?", "is this a placeholder?") that detectors
apply to their candidate spans. Each is registered under a versioned name, like spaCy's
registered functions and Presidio's separate context enhancer, so a detector can say which
filters it applies (its ``filters`` tuple, recorded with its config) and a change to a filter's
output bumps its version. A dict and a decorator are enough: there are a few dozen of them.

Layering: filters sit above :mod:`pipeline.maths` and the ground floor and below detectors and
the tagger, which import them (never the other way round; tests/test_boundaries.py checks it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_FILTERS: dict[str, Callable[..., Any]] = {}
_MODULES = ("maths", "placeholder", "anchor", "cues", "months", "junk", "worksheet", "name_filters", "entities")


def register(name: str, version: str) -> Callable[[F], F]:
    """Register ``fn`` as filter ``name``; it gains ``name`` and ``version`` attributes."""

    def decorator(fn: F) -> F:
        if name in _FILTERS and _FILTERS[name] is not fn:
            raise ValueError(f"filter {name!r} is registered twice")
        fn.name = name  # type: ignore[attr-defined]
        fn.version = version  # type: ignore[attr-defined]
        _FILTERS[name] = fn
        return fn

    return decorator


def _load_all() -> None:
    for module in _MODULES:
        importlib.import_module(f"{__name__}.{module}")


def get(name: str) -> Callable[..., Any]:
    """The filter registered as ``name``."""
    _load_all()
    try:
        return _FILTERS[name]
    except KeyError:
        raise KeyError(f"unknown filter {name!r}; available: {', '.join(names())}") from None


def names() -> list[str]:
    """Every registered filter name."""
    _load_all()
    return sorted(_FILTERS)


def versioned(filter_names: tuple[str, ...]) -> tuple[str, ...]:
    """``("maths.context@1", ...)``: the names a detector records, with their versions."""
    return tuple(f"{n}@{get(n).version}" for n in filter_names)
