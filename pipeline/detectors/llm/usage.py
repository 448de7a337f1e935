"""What an ``llm`` detector spent and what went wrong, counted so that nothing is lost silently.

A run reads it after each chunk and adds it to the run's (:func:`usage_add`); the command and the
run decide with :func:`failed_share_error` whether too many messages got no usable answer.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

# Each kind of problem and the usage counter it adds to.
PROBLEM_KEYS = {
    "unparsable": "unparsable",  # not the JSON asked for
    "truncated": "truncated",  # cut at max_tokens (finish_reason "length")
    "placeholder": "placeholders",  # the prompt's template copied back ("<exact string ...>")
    "unknown_label": "unknown_labels",  # a label outside the taxonomy and its aliases
    "unlocatable": "unlocatable",  # a string that is not in the target message
    "timeout": "timeouts",  # no answer within timeout_s
}
COUNTERS = (
    "messages",
    "requests",
    "retries",
    "reasks",
    "prompt_tokens",
    "completion_tokens",
    "failed_messages",
    *PROBLEM_KEYS.values(),
)
MAX_PROBLEMS = 200
DEFAULT_MAX_FAILED_SHARE = 0.05


class Ledger:
    """Thread-safe counters and the first :data:`MAX_PROBLEMS` problems, each
    ``{"dialogue_id", "index", "kind", "detail", "failed"}``; ``failed`` marks the problem that
    left its message without an answer (its spans are empty, or the dialogue failed)."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.problems: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] += n

    def problem(self, dialogue_id: str, index: int, kind: str, detail: str, *, failed: bool = False) -> None:
        with self.lock:
            self.counts[PROBLEM_KEYS[kind]] += 1
            self.counts["failed_messages"] += failed
            if len(self.problems) < MAX_PROBLEMS:
                self.problems.append({"dialogue_id": dialogue_id, "index": index, "kind": kind,
                                      "detail": detail, "failed": failed})

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {**self.counts, "failed": [p for p in self.problems if p["failed"]]}


def usage_add(total: Mapping[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    """``total`` plus ``more``: numbers summed, failed messages listed (the first
    :data:`MAX_PROBLEMS`)."""
    out = dict(total)
    for key, value in more.items():
        if key == "failed":
            out[key] = [*out.get(key, []), *value][:MAX_PROBLEMS]
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = round(out.get(key, 0) + value, 6)
    return out


def failed_share_error(usage: Mapping[str, Any], max_share: float) -> str | None:
    """Why a run must fail when more than ``max_share`` of its messages got no usable answer
    (skipped with empty spans), else ``None``."""
    failed, messages = usage.get("failed_messages", 0), usage.get("messages", 0)
    if not messages or failed / messages <= max_share:
        return None
    return (f"{failed} of {messages} messages ({failed / messages:.1%}) got no usable answer from the "
            f"model, more than the {max_share:.1%} allowed (max_failed_share)")


def usage_line(usage: Mapping[str, Any]) -> str:
    """One line for a person: requests, retries, tokens and every problem that occurred."""
    parts = [f"{usage.get(k, 0)} {k}" for k in ("requests", "retries", "reasks")]
    parts.append(f"{usage.get('prompt_tokens', 0)}+{usage.get('completion_tokens', 0)} tokens")
    problems = [f"{usage[k]} {k}" for k in ("failed_messages", *PROBLEM_KEYS.values()) if usage.get(k)]
    return ", ".join(parts) + "; problems: " + (", ".join(problems) or "none")
