"""Optional LLM surrogates: one chat call per dialogue returns the whole mapping (as PIIvot does).

Every proposed surrogate is checked with the same rules as the offline ones
(:func:`pipeline.surrogates.rules.rule_error`); the ones that fail are sent back with the reason,
up to ``max_rounds`` calls. Whatever is still missing or wrong — and any API error — falls back to
the offline surrogates in :class:`~pipeline.surrogates.engine.Deidentifier` (then to the tag):
never to the original.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.llm_client import openai_client, reply_json
from pipeline.prompting import PROMPTS_DIR, Prompt, PromptError
from pipeline.surrogates.keyed import normalize
from pipeline.types import Dialogue

MAX_TRANSCRIPT_CHARS = 6000


class SurrogateLLMError(RuntimeError):
    """The endpoint failed or answered with something unusable."""


def parse_mapping(content: str) -> dict[str, str]:
    """``{normalized original: surrogate}`` from a reply (a fenced block is accepted)."""
    try:
        obj = reply_json(content)
    except json.JSONDecodeError as exc:
        raise SurrogateLLMError(f"the reply is not JSON: {exc.msg}") from None
    rows: Any = obj.get("surrogates") if isinstance(obj, dict) else obj
    out: dict[str, str] = {}
    if isinstance(rows, dict):  # {"original": "surrogate"} is accepted too
        rows = [{"original": k, "surrogate": v} for k, v in rows.items()]
    if not isinstance(rows, list):
        raise SurrogateLLMError("the reply has no 'surrogates' list")
    for row in rows:
        if (
            isinstance(row, dict)
            and isinstance(row.get("original"), str)
            and isinstance(row.get("surrogate"), str)
        ):
            out[normalize(row["original"])] = row["surrogate"].strip()
    return out


class LLMSurrogates:
    """Propose surrogates with a chat model behind an OpenAI-compatible API.

    ``client`` may be given (tests, a shared client); otherwise an ``openai.OpenAI`` client is
    built on first use, so constructing this object never touches the network.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str = "",
        timeout_s: float = 60.0,
        max_rounds: int = 3,
        temperature: float = 0.7,
        prompt: str = "surrogates_v1",
        client: Any = None,
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self.model = model
        self.base_url = base_url
        self.api_key = api_key or "not-needed"
        self.timeout_s = timeout_s
        self.max_rounds = max_rounds
        self.temperature = temperature
        try:
            self.prompt = Prompt(PROMPTS_DIR / f"{prompt}.txt")
        except PromptError as exc:
            raise SurrogateLLMError(str(exc)) from None
        self.prompt_version = self.prompt.version
        self._client = client
        self.usage = {"requests": 0, "reasks": 0, "accepted": 0, "rejected": 0}

    @property
    def version(self) -> str:
        return f"llm:{self.model}:{self.prompt_version}"

    def _get_client(self):
        if self._client is None:
            self._client = openai_client(
                base_url=self.base_url, api_key=self.api_key, timeout_s=self.timeout_s, max_retries=1
            )
        return self._client

    def _complete(self, chat: list[dict[str, str]]) -> str:
        self.usage["requests"] += 1
        try:
            reply = self._get_client().chat.completions.create(
                model=self.model,
                messages=chat,
                temperature=self.temperature,
                response_format={"type": "json_object"},
            )
            return reply.choices[0].message.content or ""
        except Exception as exc:  # noqa: BLE001 - any client error is a failed call
            raise SurrogateLLMError(f"{type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _transcript(dialogue: Dialogue) -> str:
        lines = [f"Problem: {dialogue.anchor}"] if dialogue.anchor else []
        lines += [f"{m.speaker}: {m.text}" for m in dialogue.messages]
        text = "\n".join(lines)
        return text[:MAX_TRANSCRIPT_CHARS]

    def propose(
        self,
        dialogue: Dialogue,
        items: Sequence[tuple[str, str]],
        check: Callable[[str, str, str], str | None],
    ) -> dict[tuple[str, str], str]:
        """``{(label, original): surrogate}`` for the items the model got right within the rounds."""
        listing = "\n".join(json.dumps({"original": t, "label": lab}) for lab, t in items)
        chat = [
            {"role": "system", "content": self.prompt["system"].safe_substitute()},
            {
                "role": "user",
                "content": self.prompt["user"].safe_substitute(
                    transcript=self._transcript(dialogue), items=listing
                ),
            },
        ]
        accepted: dict[tuple[str, str], str] = {}
        taken: set[str] = set()
        pending = list(items)
        for round_ in range(self.max_rounds):
            content = self._complete(chat)
            try:
                mapping = parse_mapping(content)
            except SurrogateLLMError as exc:
                problems = [str(exc)]
            else:
                problems = []
                still = []
                for label, text in pending:
                    cand = mapping.get(normalize(text))
                    err = "missing" if cand is None else check(label, text, cand)
                    if err is None and normalize(cand) in taken:
                        err = "already used for another original"
                    if err is None:
                        accepted[(label, text)] = cand
                        taken.add(normalize(cand))
                    else:
                        still.append((label, text))
                        problems.append(f"- {text!r} ({label}): {err}")
                pending = still
            if not pending or round_ == self.max_rounds - 1:
                break
            self.usage["reasks"] += 1
            chat += [
                {"role": "assistant", "content": content},
                {
                    "role": "user",
                    "content": self.prompt["reask"].safe_substitute(problems="\n".join(problems)),
                },
            ]
        self.usage["accepted"] += len(accepted)
        self.usage["rejected"] += len(pending)
        return accepted
