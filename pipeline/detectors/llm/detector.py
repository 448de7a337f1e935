"""The ``llm`` detector: requests, retries, concurrency and accounting (see the package doc)."""

from __future__ import annotations

import random
import threading
import time
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
    is_placeholder,
    locate,
    normalise_label,
    parse_reply,
)
from pipeline.detectors.llm.usage import DEFAULT_MAX_FAILED_SHARE, Ledger
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
MAX_AUTO_TOKENS = 4096

# One gate per endpoint in this process: detectors that share an endpoint (a run's chunks, an
# ensemble's members, several strategies) share its ``concurrency`` instead of adding theirs.
_ENDPOINT_GATES: dict[str, threading.BoundedSemaphore] = {}
_GATES_LOCK = threading.Lock()


class BudgetSpent(DetectorError):
    """The run's budget (``max_requests`` or ``max_seconds``) is spent: nothing more is sent."""


class TimedOut(Exception):
    """No answer within ``timeout_s``: the endpoint may still be working on the request."""


def endpoint_gate(base_url: str, concurrency: int) -> threading.BoundedSemaphore:
    """The semaphore of ``base_url`` (sized by the first detector that asks for it)."""
    with _GATES_LOCK:
        return _ENDPOINT_GATES.setdefault(base_url, threading.BoundedSemaphore(concurrency))


class LLMDetector(BaseDetector):
    """PII spans from a chat model (OpenAI-compatible API), with MathEd-PII's prompt strategies."""

    name = "llm"
    version = "2"
    filters: tuple[str, ...] = ()  # the model's reply is taken as is: no maths or cue filters
    # Its requests wait on the endpoint, not on the CPU: its own threads keep the endpoint busy,
    # and more processes would each add their ``concurrency`` (and their own usage, out of sight).
    max_processes = 1
    defaults: Mapping[str, Any] = {
        "base_url": None,
        "api_key": None,
        "model": None,
        "strategy": "basic",
        "prompt_version": "v1",
        "labels": None,  # names, or {name: description}; default: the project taxonomy
        "temperature": 0.0,
        "max_tokens": None,  # None: sized to the target message and the labels (_max_tokens)
        "json_mode": True,  # send response_format={"type": "json_object"}
        "timeout_s": 60.0,
        "timeout_retries": 0,  # a timed-out request is not sent again into a busy server
        "max_retries": 4,
        "backoff_base_s": 1.0,
        "backoff_max_s": 30.0,
        "jitter": 0.25,  # up to this fraction of each delay is added at random
        "concurrency": 4,  # requests in flight at once to one endpoint, from this process
        "max_requests": None,  # the run's budget: it stops, saying so, when either is spent
        "max_seconds": None,
        "max_failed_share": DEFAULT_MAX_FAILED_SHARE,  # more failed messages fail the run
        "price_per_1k_input": 0.0,
        "price_per_1k_output": 0.0,
        "on_unparsable": "skip",  # a message with no usable answer: empty and recorded, or "raise"
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
        for key, low in (("concurrency", 1), ("max_retries", 0), ("timeout_retries", 0)):
            if not isinstance(c[key], int) or c[key] < low:
                raise ConfigError(f"llm: {key} must be an integer >= {low}")
        for key in ("max_tokens", "max_requests", "max_seconds"):
            if c[key] is not None and (not isinstance(c[key], int | float) or c[key] <= 0):
                raise ConfigError(f"llm: {key} must be a number > 0 (or null)")
        if not isinstance(c["max_failed_share"], int | float) or not 0 <= c["max_failed_share"] <= 1:
            raise ConfigError("llm: max_failed_share must be a number between 0 and 1")
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
        self._ledger = Ledger()
        self.problems = self._ledger.problems
        self._lock = threading.Lock()
        self._started: float | None = None
        self._client: Any = None
        self._segmenter: Any = None

    # -- public ------------------------------------------------------------------------------

    @property
    def model_version(self) -> str:
        return f"{self.name}@{self.version}:{self.config['model']}:{self.prompt.version}"

    @property
    def usage(self) -> dict[str, Any]:
        """Token, request and cost counts of everything this detector has sent so far, problems
        by kind, and the messages that got no usable answer (``failed``)."""
        out = self._ledger.snapshot()
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
        self._ledger.count("messages")
        try:
            pairs = self._answer(chat, dialogue, target, abort)
        except Unparsable as exc:
            kind, reason = exc.kind, f"{exc} (also when re-asked)"
        except TimedOut as exc:
            kind, reason = "timeout", str(exc)
        else:
            return self._spans(dialogue, target, pairs)
        self._ledger.problem(dialogue.id, target.index, kind, reason, failed=True)
        if self.config["on_unparsable"] == "skip":
            return ()
        raise DetectorError(f"llm: {where}: no usable answer from the model: {reason}")

    def _answer(
        self, chat: list[dict[str, str]], dialogue: Dialogue, target: Message, abort: threading.Event
    ) -> list[tuple[str, str]]:
        """The model's pairs, asked once more when the first reply is unusable (counted as a
        problem of its kind): with the reason when it is malformed, with twice the token budget
        when it was cut short."""
        where = f"dialogue {dialogue.id} message {target.index}"
        max_tokens = self._max_tokens(target.text)
        for attempt in range(2):
            content, finish = self._complete(chat, max_tokens, where, abort)
            try:
                if finish == "length":
                    raise Unparsable(
                        f"the reply reached max_tokens ({max_tokens}) before it ended; "
                        f"reply: {content[:120]!r}",
                        kind="truncated",
                    )
                return parse_reply(content)
            except Unparsable as exc:
                if attempt:
                    raise
                self._ledger.problem(dialogue.id, target.index, exc.kind, f"{exc}; asked again")
                self._ledger.count("reasks")
                if exc.kind == "truncated":
                    max_tokens *= 2
                    continue
                reask = self.prompt.reask.safe_substitute(problem=str(exc))
                chat = [*chat, {"role": "assistant", "content": content},
                        {"role": "user", "content": reask}]
        raise AssertionError("unreachable")  # pragma: no cover

    def _max_tokens(self, text: str) -> int:
        """The configured ``max_tokens``, else a generous bound on a complete answer: every
        character of the message copied back (about three times its tokens) and the JSON of a
        few items with the longest label, so a model that rambles is stopped early."""
        if self.config["max_tokens"]:
            return int(self.config["max_tokens"])
        per_item = 12 + max(len(label) for label in self.labels) // 3
        return min(MAX_AUTO_TOKENS, 32 + len(text) + 4 * per_item)

    def _spans(self, dialogue: Dialogue, target: Message, pairs) -> tuple[Span, ...]:
        found: set[Span] = set()
        fallback = "OTHER_IDENTIFIER" if "OTHER_IDENTIFIER" in self.labels else None
        for text, raw_label in pairs:
            if is_placeholder(text):
                self._ledger.problem(dialogue.id, target.index, "placeholder", f"{text!r} ({raw_label!r})")
                continue
            label = normalise_label(raw_label, tuple(self.labels))
            if label is None:
                kept = f"kept as {fallback}" if fallback else "dropped"
                self._ledger.problem(
                    dialogue.id, target.index, "unknown_label", f"{raw_label!r} for {text!r}: {kept}"
                )
                label = fallback
                if label is None:
                    continue
            places = locate(text, target.text)
            if not places:
                self._ledger.problem(dialogue.id, target.index, "unlocatable", text)
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

    def _complete(
        self, chat: list[dict[str, str]], max_tokens: int, where: str, abort: threading.Event
    ) -> tuple[str, str | None]:
        """The reply's text and ``finish_reason``, transient errors retried with backoff. A
        timeout is retried only ``timeout_retries`` times: the server may still be working on
        the abandoned request, and sending it again would queue the same work twice."""
        import openai

        c = self.config
        kwargs: dict[str, Any] = {
            "model": c["model"],
            "messages": chat,
            "temperature": c["temperature"],
            "max_tokens": max_tokens,
        }
        if c["json_mode"]:
            kwargs["response_format"] = {"type": "json_object"}
        client = self._get_client()
        endpoint = c["base_url"]
        gate = endpoint_gate(endpoint, c["concurrency"])
        timeouts = 0
        for attempt in range(c["max_retries"] + 1):
            if abort.is_set():
                raise DetectorError(f"llm: {where}: abandoned after another message failed")
            self._spend(where)
            try:
                with gate:
                    reply = client.chat.completions.create(**kwargs)
            except openai.APITimeoutError:
                timeouts += 1
                if timeouts > c["timeout_retries"]:
                    raise TimedOut(f"no answer within timeout_s={c['timeout_s']:g} s "
                                   f"({timeouts} request(s))") from None
                retry, wait, error = True, float(c["timeout_s"]), "request timed out"
            except openai.APIStatusError as exc:
                retry = exc.status_code in RETRY_STATUSES or exc.status_code >= 500
                error = f"HTTP {exc.status_code}: {_error_text(exc)}"
                wait = _retry_after(exc)
            except openai.APIConnectionError as exc:
                retry, wait = True, None
                cause = f" ({exc.__cause__})" if exc.__cause__ else ""
                error = f"{exc}{cause}"
            except (openai.OpenAIError, ValueError) as exc:
                raise DetectorError(f"llm: {where}: bad response from {endpoint}: {exc}") from exc
            else:
                return self._read(reply, where)
            if not retry:
                raise DetectorError(f"llm: {where}: {endpoint} refused the request: {error}")
            if attempt == c["max_retries"]:
                break
            self._ledger.count("retries")
            delay = min(c["backoff_base_s"] * 2**attempt, c["backoff_max_s"])
            if wait is not None:
                delay = max(delay, min(wait, c["backoff_max_s"]))
            abort.wait(delay * (1 + c["jitter"] * random.random()))
        raise DetectorError(
            f"llm: {where}: {endpoint} failed {c['max_retries'] + 1} time(s); last error: {error}"
        )

    def _spend(self, where: str) -> None:
        """Count one request against the budget, or stop the run when it is spent."""
        c = self.config
        with self._lock:
            now = time.monotonic()
            self._started = self._started or now
            requests = self._ledger.counts["requests"]
            if c["max_requests"] is not None and requests >= c["max_requests"]:
                raise BudgetSpent(f"llm: {where}: the budget of {c['max_requests']:g} requests "
                                  "(max_requests) is spent; nothing more is sent")
            if c["max_seconds"] is not None and now - self._started >= c["max_seconds"]:
                raise BudgetSpent(f"llm: {where}: the budget of {c['max_seconds']:g} s "
                                  "(max_seconds) is spent; nothing more is sent")
        self._ledger.count("requests")

    def _read(self, reply: Any, where: str) -> tuple[str, str | None]:
        usage = getattr(reply, "usage", None)
        self._ledger.count("prompt_tokens", int(getattr(usage, "prompt_tokens", 0) or 0))
        self._ledger.count("completion_tokens", int(getattr(usage, "completion_tokens", 0) or 0))
        choices = getattr(reply, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:
            raise DetectorError(
                f"llm: {where}: {self.config['base_url']} answered with something that "
                f"is not a chat completion: {str(reply)[:200]!r}"
            )
        return getattr(message, "content", None) or "", getattr(choices[0], "finish_reason", None)

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
