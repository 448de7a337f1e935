"""The ``llm`` detector against any OpenAI-compatible endpoint: messages/s, usage and problems per
prompt strategy, and optionally every reply recorded for the tests.

    .venv/bin/python bench/llm_endpoint_bench.py --base-url http://127.0.0.1:8080/v1 --model NAME
        [--corpus ../shared/data/bridge.jsonl] [--dialogues 15] [--strategies basic,math_aware,...]
        [--config '{"concurrency": 2, "json_mode": false}'] [--record replies.jsonl]

``OPENAI_API_KEY`` is sent when set (any string for a local server). Without ``--corpus`` the
targets of tests/fixtures/llm_replies.jsonl are the corpus, one message per dialogue. For each
strategy it prints messages, seconds, messages/s, the usage line (requests, retries, re-asks,
tokens, problems by kind), the failed share against ``max_failed_share`` and the first failed
messages. Nothing stops at the first failure: a budget spent or an endpoint gone is printed too.

``--record`` sends the requests through a recording proxy on 127.0.0.1 and writes one line per
target message and strategy in the fixture's format (``{"name", "strategy", "target", "source",
"replies"}``: the chat completion bodies in the order the endpoint sent them), ready for
tests/fake_openai.replay (one strategy's lines at a time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline import registry  # noqa: E402
from pipeline.detectors.base import DetectorError  # noqa: E402
from pipeline.detectors.llm import STRATEGIES, failed_share_error, usage_line  # noqa: E402
from pipeline.formats import read_corpus  # noqa: E402
from pipeline.types import Dialogue, Message  # noqa: E402
from tests.fake_openai import recorded, target_text  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llm_replies.jsonl"


class Recorder:
    """A proxy that forwards each chat request to ``upstream`` and keeps each reply by target."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.strategy = ""  # set by the caller before each strategy's run
        self.replies: dict[tuple[str, str], list[dict]] = {}
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path.removeprefix("/v1")
                forward = urllib.request.Request(recorder.upstream + path, data=raw, method="POST",
                                                 headers={k: v for k, v in self.headers.items()
                                                          if k.lower() in ("content-type", "authorization")})
                try:
                    with urllib.request.urlopen(forward, timeout=3600) as response:
                        status, body = response.status, response.read()
                except urllib.error.HTTPError as exc:
                    status, body = exc.code, exc.read()
                if status == 200:
                    with recorder.lock:
                        key = (recorder.strategy, target_text(json.loads(raw)))
                        recorder.replies.setdefault(key, []).append(json.loads(body))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the detector gave up (a timeout): the reply is recorded all the same

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def corpus(args) -> list[Dialogue]:
    if args.corpus:
        return read_corpus(args.corpus)[: args.dialogues]
    return [Dialogue(row["name"], (Message(row["target"], role="tutor", index=0),)) for row in recorded(FIXTURE)]


def bench(strategy: str, dialogues: list[Dialogue], base_url: str, args) -> None:
    config = {"base_url": base_url, "model": args.model, "strategy": strategy,
              "api_key": os.environ.get("OPENAI_API_KEY"), **json.loads(args.config)}
    detector = registry.build("llm", config)
    messages, stopped = 0, ""
    t0 = time.perf_counter()
    try:
        for found in detector.detect_many(dialogues):
            messages += len(found)
    except DetectorError as exc:
        stopped = f"  stopped: {exc}"
    seconds = time.perf_counter() - t0
    usage = detector.usage
    detector.close()
    print(f"{strategy}: {messages} messages in {seconds:.1f}s ({messages / seconds if seconds else 0:.2f} messages/s, "
          f"concurrency {detector.config['concurrency']})")
    print(f"  usage: {usage_line(usage)}")
    print(f"  failed share: {failed_share_error(usage, detector.config['max_failed_share']) or 'within max_failed_share'}")
    for p in usage["failed"][:5]:
        print(f"  failed: dialogue {p['dialogue_id']} message {p['index']}: {p['kind']}: {p['detail'][:160]}")
    if stopped:
        print(stopped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", help="An import-format corpus file (default: the fixture's targets).")
    parser.add_argument("--dialogues", type=int, default=15)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--config", default="{}", help="More detector config, as JSON.")
    parser.add_argument("--record", type=Path, help="Write every reply here, in the fixture's format.")
    args = parser.parse_args()
    dialogues = corpus(args)
    recorder = Recorder(args.base_url) if args.record else None
    for strategy in args.strategies.split(","):
        if recorder:
            recorder.strategy = strategy
        bench(strategy, dialogues, recorder.base_url if recorder else args.base_url, args)
    if recorder:
        source = f"recorded from {args.model} at {args.base_url} by bench/llm_endpoint_bench.py"
        with args.record.open("w", encoding="utf-8") as fh:
            for n, ((strategy, target), replies) in enumerate(recorder.replies.items()):
                fh.write(json.dumps({"name": f"{strategy}_{n}", "strategy": strategy, "target": target,
                                     "source": source, "replies": replies}) + "\n")
        print(f"{len(recorder.replies)} targets' replies recorded -> {args.record}")


if __name__ == "__main__":
    main()
