"""A small OpenAI-compatible chat server for tests: 127.0.0.1, a free port, no network.

    def handler(request: dict) -> Reply:           # the parsed JSON body of the POST
        return ok({"pii": [{"text": "Alex", "label": "NAME"}]})

    with FakeOpenAI(handler) as server:
        build("llm", {"base_url": server.base_url, "model": "fake", ...})
        server.requests                           # every body received, in order

``Reply`` sets the status, the body (a dict is sent as JSON, a str as is), extra headers and a
delay before answering (longer than the client's timeout = a timeout). Helpers: :func:`ok` (a
chat completion whose message content is the given JSON or text), :func:`error`,
:func:`scripted` (replies in turn, the last one repeated), :func:`pii_handler` (answers from a
function of the target message, for tests that only care about spans), :func:`target_text`, and
:func:`replay` with :func:`recorded` (a real endpoint's replies, recorded, sent again).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | str = ""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[dict[str, Any]], Reply]


def ok(content: Any, *, prompt_tokens: int = 100, completion_tokens: int = 10,
       model: str = "fake-model", finish_reason: str = "stop") -> Reply:
    """A 200 chat completion; ``content`` that is not a str is sent as its JSON text."""
    text = content if isinstance(content, str) else json.dumps(content)
    return Reply(200, {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })


def error(status: int, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": "fake_error", "code": status}},
                 headers=headers or {})


def scripted(replies: Iterable[Reply]) -> Handler:
    """Answer with each reply in turn (across all requests), then keep repeating the last."""
    queue = list(replies)
    lock = threading.Lock()

    def handler(request: dict[str, Any]) -> Reply:
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    return handler


_TARGET = re.compile(r"<target\b[^>]*>(.*)</target>", re.S)


def target_text(request: dict[str, Any]) -> str:
    """The target message of an ``llm`` detector request (from its first user message)."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    match = _TARGET.search(user)
    return match.group(1) if match else ""


def pii_handler(find: Callable[[str], list[dict[str, str]]]) -> Handler:
    """Answer ``{"pii": find(target text)}``; ``find`` returns ``[{"text", "label"}, ...]``."""
    return lambda request: ok({"pii": find(target_text(request))})


def recorded(path: str | Path) -> list[dict[str, Any]]:
    """The recorded replies of a JSONL file (bench/llm_endpoint_bench.py --record writes them):
    one line per target message, ``{"name", "target", "source", "replies": [chat completion
    bodies, in the order the endpoint sent them]}``."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def replay(rows: Iterable[dict[str, Any]]) -> Handler:
    """Answer each target message with its recorded replies in turn (the last one repeated), as
    the real endpoint did: a re-ask gets the reply the re-ask got."""
    queues = {row["target"]: list(row["replies"]) for row in rows}
    lock = threading.Lock()

    def handler(request: dict[str, Any]) -> Reply:
        with lock:
            queue = queues.get(target_text(request))
            if not queue:
                return error(404, f"no recorded reply for {target_text(request)!r}")
            return Reply(200, queue.pop(0) if len(queue) > 1 else queue[0])

    return handler


def no_pii(request: dict[str, Any]) -> Reply:
    return ok({"pii": []})


class FakeOpenAI:
    """``POST /v1/chat/completions`` answered by ``handler``; ``GET /v1/models`` lists one."""

    def __init__(self, handler: Handler = no_pii) -> None:
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # the HTTP headers of each request, same order
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(Reply(200, {"object": "list", "data": [
                        {"id": "fake-model", "object": "model", "owned_by": "tests"}]}))
                else:
                    self._send(error(404, f"no route {self.path}"))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(error(404, f"no route {self.path}"))
                    return
                try:
                    request = json.loads(raw)
                except ValueError:
                    self._send(error(400, "request body is not JSON"))
                    return
                with fake._lock:
                    fake.requests.append(request)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                try:
                    reply = fake.handler(request)
                except Exception as exc:  # a broken test handler shows up as a 500
                    reply = error(500, f"fake handler raised {exc!r}")
                if reply.delay and fake._stop.wait(reply.delay):
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                if isinstance(reply.body, str):
                    data, kind = reply.body.encode(), "text/plain; charset=utf-8"
                else:
                    data, kind = json.dumps(reply.body).encode(), "application/json"
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True, name="fake-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
