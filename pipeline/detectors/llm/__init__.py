"""``llm``: PII spans from a chat model behind any OpenAI-compatible endpoint.

MathEd-PII's three prompt strategies, each a versioned file under ``pipeline/prompts/``:

* ``basic`` — the plain instruction;
* ``math_aware`` — adds that maths content, word-problem characters, numbers, fractions and dates
  inside problems are not PII, and shows the dialogue's word problem;
* ``segment_aware`` — like ``math_aware`` but every message shown carries its MATH / NON-MATH
  label, taken from ``message.meta["segment"]`` or computed by the ``math_segments`` detector.

Each message is one request: the previous and next message are context, only the target is
labelled. The model answers ``{"pii": [{"text": ..., "label": ...}]}``; every returned string is
located in the target (all occurrences, word-bounded where possible) and becomes a span. Strings
that cannot be found are counted in :attr:`LLMDetector.usage` and listed in
:attr:`LLMDetector.problems`.

Failure policy. Transient errors (429, 408, 409, 5xx, timeouts, refused connections) are retried
``max_retries`` times with exponential backoff and jitter. A reply that is not the JSON asked for
is re-asked once. What still fails raises :class:`DetectorError` for the whole dialogue (and so
for the chunk of the run that holds it): a message silently read as "no PII" would be a leak
nobody sees. ``on_unparsable="skip"`` trades that for an empty, recorded result instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pipeline.detectors.llm.detector import STRATEGIES, LLMDetector
from pipeline.detectors.llm.replies import (
    PROMPTS_DIR,
    Prompt,
    Unparsable,
    locate,
    normalise_label,
    parse_reply,
)
from pipeline.registry import register

__all__ = [
    "PROMPTS_DIR",
    "STRATEGIES",
    "LLMDetector",
    "Prompt",
    "Unparsable",
    "locate",
    "make_llm",
    "normalise_label",
    "parse_reply",
]


@register("llm", "PII spans from a chat model behind an OpenAI-compatible endpoint")
def make_llm(config: Mapping[str, Any]) -> LLMDetector:
    """Build from ``config``; only missing endpoint settings fall back to the environment."""
    config = dict(config)
    for key, var in (
        ("base_url", "OPENAI_BASE_URL"),
        ("api_key", "OPENAI_API_KEY"),
        ("model", "BLINDSPOT_LLM_MODEL"),
    ):
        if not config.get(key) and os.environ.get(var):
            config[key] = os.environ[var]
    return LLMDetector(config)
