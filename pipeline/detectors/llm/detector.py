"""The ``llm`` detector: requests, retries, concurrency and accounting (see the package doc)."""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pipeline.detectors.base import BaseDetector, ConfigError, DetectorError
from pipeline.detectors.llm.replies import (
    PROMPTS_DIR,
    Prompt,
    PromptError,
    Unparsable,
    locate,
    normalise_label,
    parse_reply,
)
from pipeline.llm_client import ClientUnavailable, openai_client
from pipeline.types import (
    DEFAULT_LABELS,
    DEFAULT_TAXONOMY,
    MATH,
    NON_MATH,
    Detection,
    Dialogue,
    Message,
    Span,
    resolve_overlaps,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
STRATEGIES = ("basic", "math_aware", "segment_aware")
RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx
MAX_PROBLEMS = 200


class LLMDetector(BaseDetector):
    """PII spans from a chat model (OpenAI-compatible API), with MathEd-PII's prompt strategies."""

    name = "llm"
    version = "1"
    filters: tuple[str, ...] = ()  # the model's reply is taken as is: no maths or cue filters
    defaults: Mapping[str, Any] = {
        "base_url": None,
        "api_key": None,
        "model": None,
        "strategy": "basic",
        "prompt_version": "v1",
        "labels": None,  # names, or {name: description}; default: the project taxonomy
        "temperature": 0.0,
        "max_tokens": None,
        "json_mode": True,  # send response_format={"type": "json_object"}
        "timeout_s": 60.0,
        "max_retries": 4,
        "backoff_base_s": 1.0,
        "backoff_max_s": 30.0,
        "jitter": 0.25,  # up to this fraction of each delay is added at random
        "concurrency": 4,
        "price_per_1k_input": 0.0,
        "price_per_1k_output": 0.0,
        "on_unparsable": "raise",  # or "skip": empty, recorded result for that message
        "segments": {"embed": False},  # config of math_segments when segment_aware must compute
    }

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        c = self.config
        self._api_key: str = c["api_key"] or "not-needed"
        c["api_key"] = None  # never kept where a run record or a log could show it
        if not c["model"]:
            raise ConfigError("llm: no model; set config 'model' (or BLINDSPOT_LLM_MODEL)")
        c["base_url"] = c["base_url"] or DEFAULT_BASE_URL
        if c["strategy"] not in STRATEGIES:
            raise ConfigError(f"llm: strategy must be one of {', '.join(STRATEGIES)}")
        if c["on_unparsable"] not in ("raise", "skip"):
            raise ConfigError("llm: on_unparsable must be 'raise' or 'skip'")
        for key, low in (("concurrency", 1), ("max_retries", 0)):
            if not isinstance(c[key], int) or c[key] < low:
                raise ConfigError(f"llm: {key} must be an integer >= {low}")
        for key in (
            "timeout_s",
            "backoff_base_s",
            "backoff_max_s",
            "jitter",
            "price_per_1k_input",
            "price_per_1k_output",
            "temperature",
        ):
            if not isinstance(c[key], int | float) or c[key] < 0:
                raise ConfigError(f"llm: {key} must be a number >= 0")
        self.labels = _label_table(c["labels"])
        path = PROMPTS_DIR / f"llm_{c['strategy']}_{c['prompt_version']}.txt"
        if not path.is_file():
            raise ConfigError(f"llm: no prompt file {path.name} in {PROMPTS_DIR}")
        try:
            self.prompt = Prompt(path)
        except PromptError as exc:
            raise ConfigError(f"llm: {exc}") from None
        self.problems: list[dict[str, Any]] = []
        self._usage = dict.fromkeys(
            (
                "prompt_tokens",
                "completion_tokens",
                "requests",
                "retries",
                "reasks",
                "messages",
                "unlocatable",
                "unknown_labels",
                "failed_messages",
            ),
            0,
        )
        self._lock = threading.Lock()
        self._client: Any = None
        self._segmenter: Any = None

    # -- public ------------------------------------------------------------------------------

    @property
    def model_version(self) -> str:
        return f"{self.name}@{self.version}:{self.config['model']}:{self.prompt.version}"

    @property
    def usage(self) -> dict[str, Any]:
        """Token, request and cost counts of everything this detector has sent so far."""
        with self._lock:
            out: dict[str, Any] = dict(self._usage)
        out["cost_usd"] = round(
            out["prompt_tokens"] / 1000 * self.config["price_per_1k_input"]
            + out["completion_tokens"] / 1000 * self.config["price_per_1k_output"],
            6,
        )
        return out

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        results = self.detect_many([dialogue])
        try:
            return next(results)
        finally:
            results.close()

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        """Messages of several dialogues in flight at once (``concurrency``); results in order."""
        abort = threading.Event()
        limit = self.config["concurrency"]
        pending: deque[tuple[Dialogue, list[str | None], list[Future]]] = deque()
        in_flight = 0
        with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="llm") as pool:
            try:
                for dialogue in dialogues:
                    segments = self._segments(dialogue)
                    futures = [
                        pool.submit(self._detect_message, dialogue, i, segments, abort)
                        for i in range(len(dialogue.messages))
                    ]
                    pending.append((dialogue, segments, futures))
                    in_flight += len(futures)
                    # keep the pool busy: hand back the oldest dialogue once enough follow it
                    while in_flight - len(pending[0][2]) >= limit:
                        in_flight -= len(pending[0][2])
                        yield self._collect(*pending[0])
                        pending.popleft()
                while pending:
                    yield self._collect(*pending[0])
                    pending.popleft()
            except BaseException:  # a failure, or the caller stopped early: send no more
                abort.set()
                for _, _, futures in pending:
                    for f in futures:
                        f.cancel()
                raise

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- one message -------------------------------------------------------------------------

    def _collect(self, dialogue: Dialogue, segments: list[str | None], futures: list[Future]):
        return [
            Detection(dialogue.id, m.index, f.result(), segment=seg)
            for m, seg, f in zip(dialogue.messages, segments, futures, strict=True)
        ]

    def _detect_message(
        self, dialogue: Dialogue, i: int, segments: list[str | None], abort: threading.Event
    ) -> tuple[Span, ...]:
        target = dialogue.messages[i]
        where = f"dialogue {dialogue.id} message {target.index}"
        chat = [
            {
                "role": "system",
                "content": self.prompt.system.safe_substitute(labels=self._label_lines()),
            },
            {"role": "user", "content": self._user_content(dialogue, i, segments)},
        ]
        self._count("messages")
        for attempt in range(2):  # the answer, then one re-ask
            content = self._complete(chat, where, abort)
            try:
                pairs = parse_reply(content)
                break
            except Unparsable as exc:
                if attempt == 0:
                    self._count("reasks")
                    chat += [
                        {"role": "assistant", "content": content},
                        {
                            "role": "user",
                            "content": self.prompt.reask.safe_substitute(problem=str(exc)),
                        },
                    ]
                    continue
                self._count("failed_messages")
                self._problem(dialogue, target, "unparsable", f"{exc}; reply: {content[:200]!r}")
                if self.config["on_unparsable"] == "skip":
                    return ()
                raise DetectorError(
                    f"llm: {where}: the model's reply is not the JSON asked for, even when "
                    f"re-asked: {exc}"
                ) from None
        return self._spans(dialogue, target, pairs)

    def _spans(self, dialogue: Dialogue, target: Message, pairs) -> tuple[Span, ...]:
        found: set[Span] = set()
        for text, raw_label in pairs:
            label = normalise_label(raw_label, tuple(self.labels))
            if label is None:
                self._count("unknown_labels")
                self._problem(dialogue, target, "unknown_label", f"{raw_label!r} for {text!r}")
                continue
            places = locate(text, target.text)
            if not places:
                self._count("unlocatable")
                self._problem(dialogue, target, "unlocatable", text)
            found.update(Span(s, e, label, 1.0, self.name) for s, e in places)
        return tuple(resolve_overlaps(found))

    def _user_content(self, dialogue: Dialogue, i: int, segments: list[str | None]) -> str:
        with_segment = self.config["strategy"] == "segment_aware"
        parts = []
        for tag, j in (("previous", i - 1), ("target", i), ("next", i + 1)):
            if 0 <= j < len(dialogue.messages):
                m = dialogue.messages[j]
                seg = f' segment="{segments[j]}"' if with_segment else ""
                parts.append(f'<{tag} role="{m.role}"{seg}>{m.text}</{tag}>')
        anchor = f"<problem>{dialogue.anchor}</problem>" if dialogue.anchor.strip() else ""
        return self.prompt.user.safe_substitute(anchor=anchor, context="\n".join(parts)).strip()

    def _label_lines(self) -> str:
        return "\n".join(f"- {k}: {v}" if v else f"- {k}" for k, v in self.labels.items())

    # -- the endpoint ------------------------------------------------------------------------

    def _get_client(self):
        with self._lock:
            if self._client is None:
                try:
                    self._client = openai_client(
                        base_url=self.config["base_url"],
                        api_key=self._api_key,
                        timeout_s=float(self.config["timeout_s"]),
                        max_retries=0,
                    )
                except ClientUnavailable as exc:  # pragma: no cover - a declared dependency
                    raise DetectorError(f"llm: {exc}") from exc
            return self._client

    def _complete(self, chat: list[dict[str, str]], where: str, abort: threading.Event) -> str:
        import openai

        c = self.config
        kwargs: dict[str, Any] = {
            "model": c["model"],
            "messages": chat,
            "temperature": c["temperature"],
        }
        if c["json_mode"]:
            kwargs["response_format"] = {"type": "json_object"}
        if c["max_tokens"]:
            kwargs["max_tokens"] = c["max_tokens"]
        client = self._get_client()
        endpoint = c["base_url"]
        for attempt in range(c["max_retries"] + 1):
            if abort.is_set():
                raise DetectorError(f"llm: {where}: abandoned after another message failed")
            self._count("requests")
            try:
                reply = client.chat.completions.create(**kwargs)
            except openai.APIStatusError as exc:
                retry = exc.status_code in RETRY_STATUSES or exc.status_code >= 500
                error = f"HTTP {exc.status_code}: {_error_text(exc)}"
                wait = _retry_after(exc)
            except openai.APIConnectionError as exc:  # includes timeouts
                retry, wait = True, None
                cause = f" ({exc.__cause__})" if exc.__cause__ else ""
                error = f"{exc}{cause}"
            except (openai.OpenAIError, ValueError) as exc:
                raise DetectorError(f"llm: {where}: bad response from {endpoint}: {exc}") from exc
            else:
                self._record(reply)
                choices = getattr(reply, "choices", None)
                message = getattr(choices[0], "message", None) if choices else None
                if message is None:
                    raise DetectorError(
                        f"llm: {where}: {endpoint} answered with something that "
                        f"is not a chat completion: {str(reply)[:200]!r}"
                    )
                return getattr(message, "content", None) or ""
            if not retry:
                raise DetectorError(f"llm: {where}: {endpoint} refused the request: {error}")
            if attempt == c["max_retries"]:
                break
            self._count("retries")
            delay = min(c["backoff_base_s"] * 2**attempt, c["backoff_max_s"])
            if wait is not None:
                delay = max(delay, min(wait, c["backoff_max_s"]))
            abort.wait(delay * (1 + c["jitter"] * random.random()))
        raise DetectorError(
            f"llm: {where}: {endpoint} failed {c['max_retries'] + 1} time(s); last error: {error}"
        )

    def _record(self, reply: Any) -> None:
        usage = getattr(reply, "usage", None)
        with self._lock:
            self._usage["prompt_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
            self._usage["completion_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)

    def _count(self, key: str) -> None:
        with self._lock:
            self._usage[key] += 1

    def _problem(self, dialogue: Dialogue, target: Message, kind: str, detail: str) -> None:
        with self._lock:
            if len(self.problems) < MAX_PROBLEMS:
                self.problems.append(
                    {
                        "dialogue_id": dialogue.id,
                        "index": target.index,
                        "kind": kind,
                        "detail": detail,
                    }
                )

    # -- segments ----------------------------------------------------------------------------

    def _segments(self, dialogue: Dialogue) -> list[str | None]:
        given = [m.meta.get("segment") for m in dialogue.messages]
        if self.config["strategy"] != "segment_aware" or all(s in (MATH, NON_MATH) for s in given):
            return given
        if self._segmenter is None:
            from pipeline.registry import UnknownDetectorError, build

            try:
                self._segmenter = build("math_segments", self.config["segments"])
            except (UnknownDetectorError, ImportError, ConfigError) as exc:
                raise DetectorError(
                    "llm: segment_aware needs message.meta['segment'] or the math_segments "
                    f"detector, which is unavailable: {exc}"
                ) from exc
        computed = self._segmenter.detect(dialogue)
        out = [
            g if g in (MATH, NON_MATH) else d.segment for g, d in zip(given, computed, strict=True)
        ]
        if any(s not in (MATH, NON_MATH) for s in out):
            raise DetectorError(f"llm: math_segments gave no segment for dialogue {dialogue.id}")
        return out


def _label_table(labels: Any) -> dict[str, str]:
    known = {d.label: d.description for d in DEFAULT_TAXONOMY}
    if labels is None:
        return {name: known[name] for name in DEFAULT_LABELS}
    if isinstance(labels, Mapping):
        table = {str(k): str(v or known.get(str(k), "")) for k, v in labels.items()}
    elif isinstance(labels, Sequence) and not isinstance(labels, str):
        table = {str(k): known.get(str(k), "") for k in labels}
    else:
        raise ConfigError("llm: labels must be a list of names or a {name: description} mapping")
    if not table:
        raise ConfigError("llm: labels is empty")
    return table


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", "") or exc)


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
