"""``llm``: PII spans from a chat model behind any OpenAI-compatible endpoint.

MathEd-PII's three prompt strategies, each a versioned file under ``pipeline/prompts/``:

* ``basic`` — the plain instruction;
* ``math_aware`` — adds that maths content, word-problem characters, numbers, fractions and dates
  inside problems are not PII, and shows the dialogue's word problem;
* ``segment_aware`` — like ``math_aware`` but every message shown carries its MATH / NON-MATH
  label, taken from ``message.meta["segment"]`` or computed by the ``math_segments`` detector.

Each message is one request: the previous and next message are context, only the target is
labelled. The model answers ``{"pii": [{"text": ..., "label": ...}]}`` (an empty reply, ``{}`` or
``{"pii": null}`` is no PII, a lone item a list of one); every returned string is located in the
target (all occurrences, word-bounded where possible) and becomes a span. Strings that cannot be
found, placeholders copied from the prompt and labels outside the taxonomy are counted by kind in
:attr:`LLMDetector.usage` and listed in :attr:`LLMDetector.problems`.

Requests are bounded: ``max_tokens`` is always sent (sized to the message and the labels unless
configured), a timed-out request is not sent again into the busy server (``timeout_retries``), a
run stops with :class:`BudgetSpent` once ``max_requests`` or ``max_seconds`` is spent, and all
detectors of a process that share an endpoint share its ``concurrency``.

Failure policy. Other transient errors (429, 408, 409, 5xx, refused connections) are retried
``max_retries`` times with exponential backoff and jitter. A reply that is not the JSON asked for
is re-asked once with the reason; one cut at ``max_tokens`` (``finish_reason == "length"``) once
with twice the budget. A message still without a usable answer gets no spans and is recorded as
failed (``usage["failed"]``, ``failed_messages``); the command and the run fail when more than
``max_failed_share`` of the messages failed (:func:`failed_share_error`).
``on_unparsable="raise"`` fails the dialogue at the first such message instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pipeline.detectors.llm.detector import STRATEGIES, BudgetSpent, LLMDetector
from pipeline.detectors.llm.replies import (
    PROMPTS_DIR,
    Prompt,
    Unparsable,
    is_placeholder,
    locate,
    normalise_label,
    parse_reply,
)
from pipeline.detectors.llm.usage import failed_share_error, usage_add, usage_line
from pipeline.registry import register

__all__ = [
    "PROMPTS_DIR",
    "STRATEGIES",
    "BudgetSpent",
    "LLMDetector",
    "Prompt",
    "Unparsable",
    "failed_share_error",
    "is_placeholder",
    "locate",
    "make_llm",
    "normalise_label",
    "parse_reply",
    "usage_add",
    "usage_line",
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
