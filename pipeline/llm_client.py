"""What the LLM detector and the LLM surrogates share: the OpenAI-compatible client, built lazily,
and the JSON body of a chat reply (a ```json fence is accepted).

Retries, re-asks and what a bad reply means stay with each caller: a detector must fail loudly,
a surrogate proposer falls back to the offline generators.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S)


class ClientUnavailable(ImportError):
    """The ``openai`` package is not installed."""


def openai_client(*, base_url: str | None, api_key: str, timeout_s: float, max_retries: int) -> Any:
    """An ``openai.OpenAI`` client; imported here, on first use, so building a detector or a
    proposer never needs the package nor touches the network."""
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ClientUnavailable("the 'openai' package is not installed") from exc
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries)


def reply_json(content: str) -> Any:
    """The JSON value of a reply, unwrapping one fenced block; raises :class:`json.JSONDecodeError`."""
    body = content.strip()
    fenced = _FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1)
    return json.loads(body)
