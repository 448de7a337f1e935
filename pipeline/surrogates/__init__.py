"""Surrogates, tags or redaction for PII spans; the leak check and the utility report of a release.

Pure Python (no Django). Entry points:

- :class:`Deidentifier` / :func:`build_deidentifier` — one dialogue at a time;
- :func:`deidentify_stream` — a stream of dialogues, memory flat;
- :mod:`pipeline.surrogates.leaks` — :class:`LeakChecker`;
- :mod:`pipeline.surrogates.utility` — :class:`UtilityReport`;
- :mod:`pipeline.surrogates.llm` — :class:`LLMSurrogates` (optional, openai client).
"""

from pipeline.surrogates.engine import MODES, SCOPES, Deidentifier, build_deidentifier
from pipeline.surrogates.keyed import KeyedRandom, SurrogateKeyError
from pipeline.surrogates.results import DeidResult, MappingEntry, Replacement, tag_for
from pipeline.surrogates.scanner import ForbiddenIndex
from pipeline.surrogates.stream import deidentify_stream, iter_spans

__all__ = [
    "MODES",
    "SCOPES",
    "DeidResult",
    "Deidentifier",
    "ForbiddenIndex",
    "KeyedRandom",
    "MappingEntry",
    "Replacement",
    "SurrogateKeyError",
    "build_deidentifier",
    "deidentify_stream",
    "iter_spans",
    "tag_for",
]
