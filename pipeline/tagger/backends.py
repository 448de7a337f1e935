"""Which runtime a saved tagger version runs on: torch, or the verified ONNX Runtime export.

It sits above both the registry (:mod:`pipeline.tagger.store`, torch weights) and the exporter
(:mod:`pipeline.tagger.onnx_export`, which loads torch weights to verify against), so neither
imports the other back.

``auto`` is decided by measurement, not by a rule of thumb about instruction sets: which of ONNX
int8, ONNX fp32 and torch bf16/int8/fp32 is fastest depends on the CPU's instructions, the thread
count and the library versions, and a rule written on one machine picked a runtime 2× slower on
another. At first load each runtime the version verified (:func:`candidates`) predicts a few
batches of generated text, each backend's start-up is timed in a fresh interpreter, and the
runtime that spends the least CPU on :data:`REFERENCE_MESSAGES` messages *with* its start-up is
kept. The start-up is part of what a user pays: every ``detect`` worker imports its runtime and
loads the model again, and torch with transformers costs about ten times ONNX Runtime's start-up,
which can outweigh a faster steady state. The choice is cached beside the version
directory (``.<version>.backend.json``, not inside it: the model store publishes and checks every
file there), keyed by the CPU's model and flags and the onnxruntime and torch versions, so it is
measured once per machine and again after any of those changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from pipeline.parallel import cpu_threads
from pipeline.tagger.model import TaggerModel, cpu_description, native_bf16
from pipeline.tagger.onnx_export import load_onnx_model, onnx_available, sample_dialogues
from pipeline.tagger.store import ModelInfo, choose_precision, load_model, read_info
from pipeline.types import Dialogue

BACKENDS = ("auto", "torch", "onnx")
MEASURE_DIALOGUES = 8  # generated, about 240 messages: a few batches of each runtime
MEASURE_REPEATS = 3  # the best of these per runtime, interleaved, so a neighbour's burst evens out
# the work one start-up is spread over: a worker's share of a 30,000-message `detect` on two workers
REFERENCE_MESSAGES = 15_000
STARTUP_TIMEOUT = 120.0  # seconds: a start-up past this is not timed (a hung import, a locked file)
METHOD = "rate+startup+own-batch"  # how a cached choice was made; one made another way is measured again
# the flags that decide the tagger's speed, named in the choice's reason
SPEED_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")

_choices: dict[tuple[str, str], dict[str, Any]] = {}  # this process's, by (version dir, machine key)


@dataclass(frozen=True)
class Candidate:
    backend: str
    precision: str

    @property
    def name(self) -> str:
        return f"{self.backend}-{self.precision}"


def candidates(info: ModelInfo) -> list[Candidate]:
    """Every runtime ``info`` may run on: its ONNX files that passed verification, the torch
    precisions training kept (bf16 only where the CPU multiplies it natively: emulated, it is
    slower than fp32 and measuring it is time lost), and torch fp32, the reference."""
    out = [Candidate("onnx", p) for p in ("int8", "fp32") if onnx_available(info, p)]
    if native_bf16() and info.precision_kept("bf16"):
        out.append(Candidate("torch", "bf16"))
    if info.precision_kept("int8"):
        out.append(Candidate("torch", "int8"))
    return [*out, Candidate("torch", "fp32")]


def choose_backend(info: ModelInfo, requested: str = "auto", precision: str = "auto") -> tuple[str, str]:
    """``(backend, precision)`` to run ``info`` in. ``auto`` with precision ``auto``: the fastest
    verified runtime on this machine (:func:`measured_choice`); a precision asked for by name runs
    in torch; ``onnx`` takes int8 unless fp32 is asked for; ``torch`` takes ``precision``."""
    if requested not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}")
    if requested == "torch":
        return "torch", choose_precision(info, precision)
    if requested == "onnx":
        if precision == "bf16":
            raise ValueError("the onnx backend runs fp32 or int8, not bf16")
        return "onnx", "fp32" if precision == "fp32" else "int8"
    if precision == "auto":
        chosen = measured_choice(info)
        return chosen["backend"], chosen["precision"]
    return "torch", choose_precision(info, precision)


def load_tagger(path: str | Path, *, precision: str = "auto", backend: str = "torch") -> TaggerModel:
    """Load a saved version on ``backend`` (see :func:`choose_backend`) in ``precision``."""
    if backend != "torch":
        backend, precision = choose_backend(read_info(path), backend, precision)
        if backend == "onnx":
            return load_onnx_model(path, precision=precision)
    return load_model(path, precision=precision)


# --- the measurement ---------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What a runtime's speed depends on besides the model: CPU, flags, threads, library versions."""
    name, flags = cpu_description()
    return {
        "cpu": name,
        "flags": sorted(flags),
        "threads": cpu_threads(),
        "software": {pkg: _version(pkg) for pkg in ("onnxruntime", "torch")},
    }


@cache
def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_key(facts: dict[str, Any]) -> str:
    """The cache key: CPU, flags and library versions. Not the threads, which the reason names: a
    ``detect --workers`` parent reads its version's runtime after its one-thread workers measured
    it, and keyed by threads it would measure again inside the command."""
    kept = {k: v for k, v in facts.items() if k != "threads"}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def choice_file(info: ModelInfo) -> Path:
    path = Path(info.path)
    return path.parent / f".{path.name}.backend.json"


def cached_choice(info: ModelInfo) -> dict[str, Any] | None:
    """The runtime measured for ``info`` on this machine, if it was (nothing is measured here)."""
    key = machine_key(machine())
    cached = _choices.get((info.path, key))
    if cached is None:
        try:
            cached = json.loads(choice_file(info).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError):
            return None
    names = [c.name for c in candidates(info)]
    current = (cached and cached.get("candidates") == names and cached.get("method") == METHOD
               and cached.get("files") == exported_files(info))
    return cached if current else None  # re-exported or measured another way since: again


def exported_files(info: ModelInfo) -> dict[str, str]:
    """The SHA-256 of each of the version's ONNX files: a re-export (another graph, another speed)
    makes a cached measurement stale."""
    return {p: e["sha256"] for p, e in (info.onnx or {}).items() if isinstance(e, dict) and "sha256" in e}


def measured_choice(
    info: ModelInfo,
    *,
    load: Callable[[str, Candidate], Any] | None = None,
    timer: Callable[[], float] = time.perf_counter,
    dialogues: Sequence[Dialogue] | None = None,
    startup: Callable[[str, Candidate], float | None] | None = None,
) -> dict[str, Any]:
    """The cheapest of :func:`candidates` on this machine: read from the cache, else measured
    (``load`` a candidate, ``timer``, the text and ``startup`` injectable for tests) and cached."""
    facts = machine()
    key = machine_key(facts)
    chosen = cached_choice(info)
    if chosen is None:
        with _one_at_a_time(choice_file(info)):  # a pool's workers: one measures, the others read it
            chosen = cached_choice(info)
            if chosen is None:
                cands = candidates(info)
                timings = measure(info, cands, load=load or _load, timer=timer, dialogues=dialogues) if len(cands) > 1 else []
                add_startups(info, timings, cands, startup or startup_seconds)
                chosen = _record(cands, timings, facts) | {"files": exported_files(info)}
                _save(info, key, chosen)
    _choices[(info.path, key)] = chosen
    return chosen


@contextmanager
def _one_at_a_time(file: Path) -> Iterator[None]:
    """An exclusive lock beside ``file`` (none where the directory is read-only or not POSIX): two
    processes measuring at once would each time the other's load."""
    try:
        import fcntl

        handle = open(file.with_name(f"{file.name}.lock"), "w")  # noqa: SIM115 - held across the yield
    except (ImportError, OSError):
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _load(path: str, candidate: Candidate) -> Any:
    if candidate.backend == "onnx":
        return load_onnx_model(path, precision=candidate.precision)
    return load_model(path, precision=candidate.precision)


def measure(
    info: ModelInfo, cands: Sequence[Candidate], *, load: Callable[[str, Candidate], Any],
    timer: Callable[[], float], dialogues: Sequence[Dialogue] | None = None,
) -> list[dict[str, Any]]:
    """Messages per second of each candidate on ``dialogues`` (generated when none): one warm-up
    pass, then the best of ``MEASURE_REPEATS`` passes, the candidates taking turns."""
    text = list(sample_dialogues(MEASURE_DIALOGUES) if dialogues is None else dialogues)
    messages = sum(len(d.messages) for d in text)
    models, failed = {}, []
    for c in cands:
        try:
            models[c] = load(info.path, c)
        except (OSError, ValueError, RuntimeError) as exc:  # e.g. a file changed since verified
            failed.append({"name": c.name, "error": str(exc)[:300]})
    if not models:
        raise RuntimeError(f"no runtime of {info.full_version} loads: {failed[0]['error']}")
    for model in models.values():
        model.predict(text[:2])  # first-call allocations, not timed
    best = dict.fromkeys(models, float("inf"))
    for _ in range(MEASURE_REPEATS):
        for c, model in models.items():
            t0 = timer()
            model.predict(text)  # its own windows per pass, as a detector runs it
            best[c] = min(best[c], timer() - t0)
    return [
        {"name": c.name, "seconds": round(s, 4), "messages": messages,
         "messages_per_second": round(messages / s, 1) if s > 0 else float("inf")}
        for c, s in best.items()
    ] + failed


_STARTUP = (
    "import sys\n"
    "from pipeline.tagger.backends import Candidate, _load\n"
    "from pipeline.types import Dialogue, Message\n"
    "model = _load(sys.argv[1], Candidate(sys.argv[2], sys.argv[3]))\n"
    "model.predict([Dialogue('s', (Message('hi Sam', 'tutor', 'tutor', 0),))])\n"
)


def startup_seconds(path: str, candidate: Candidate) -> float | None:
    """CPU-seconds a fresh interpreter spends importing ``candidate``'s runtime, loading the
    version and predicting one message: what each ``detect`` worker pays before its first chunk.
    None where that cannot be timed (the steady rate then decides alone): the process failed, ran
    past :data:`STARTUP_TIMEOUT`, or this process is no Python interpreter (under an application
    server's own binary ``sys.executable`` is that binary, which ``-c`` must never start)."""
    if not Path(sys.executable).name.lower().startswith("python"):
        return None
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "OMP_NUM_THREADS": str(cpu_threads()),
           "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    try:
        proc = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed script, the version's path
            [sys.executable, "-c", _STARTUP, path, candidate.backend, candidate.precision],
            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        usage = _reap(proc)
    except (OSError, AttributeError):  # no fork here, no wait4 (not POSIX), or reaped by another
        return None
    if usage is None or proc.returncode != 0:
        return None
    return round(usage.ru_utime + usage.ru_stime, 2)


def _reap(proc: subprocess.Popen) -> Any:
    """The child's resource usage (``os.wait4``: its own CPU, not this process's other children's),
    its exit code set on ``proc``; polled so a child that hangs is killed after
    :data:`STARTUP_TIMEOUT` (None)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
            return usage
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            return None
        time.sleep(0.05)


def add_startups(
    info: ModelInfo, timings: list[dict[str, Any]], cands: Sequence[Candidate],
    startup: Callable[[str, Candidate], float | None],
) -> None:
    """Each timed runtime's start-up CPU-seconds, measured once per backend (torch's precisions
    share its import, which is nearly all of it) on the backend's first candidate that loaded.
    Where one backend's could not be measured none counts: a missing start-up read as none would
    favour the backend whose measurement failed."""
    by_backend: dict[str, float | None] = {}
    for t in timings:
        if "error" in t:
            continue
        c = next(c for c in cands if c.name == t["name"])
        if c.backend not in by_backend:
            by_backend[c.backend] = startup(info.path, c)
        t["startup_seconds"] = by_backend[c.backend]
    if None in by_backend.values():
        for t in timings:
            t["startup_seconds"] = None


def reference_cost(timing: dict[str, Any]) -> float:
    """CPU-seconds for :data:`REFERENCE_MESSAGES` messages on one thread, start-up included where
    it was measured (:func:`add_startups`; where it was not, the rate alone decides)."""
    rate = timing.get("messages_per_second", 0.0)
    if "error" in timing or not rate:
        return float("inf")
    return (timing.get("startup_seconds") or 0.0) + REFERENCE_MESSAGES / rate


def _rate_text(t: dict[str, Any]) -> str:
    if "error" in t:
        return f"{t['name']} did not load"
    start = t.get("startup_seconds")
    starts = f", starts in {start:.1f} CPU-s" if start is not None else ""
    return f"{t['name']} {reference_cost(t):.1f} CPU-s ({t['messages_per_second']:,.0f} msg/s{starts})"


def _record(cands: Sequence[Candidate], timings: list[dict[str, Any]], facts: dict[str, Any]) -> dict[str, Any]:
    """The cached choice: the candidate with the least :func:`reference_cost`, every timing, and the
    reason in words."""
    today = datetime.now(UTC)
    flags = " ".join(f for f in SPEED_FLAGS if f in facts["flags"]) or "no AVX2"
    threads = f"{facts['threads']} thread{'' if facts['threads'] == 1 else 's'}"
    where = f"measured {today:%Y-%m-%d} on {facts['cpu'] or 'this CPU'} ({flags}), {threads}"
    if timings:
        ranked = sorted(timings, key=reference_cost)
        best = next(c for c in cands if c.name == ranked[0]["name"])
        rates = [_rate_text(t) for t in ranked]
        started = " with start-up" if any(t.get("startup_seconds") is not None for t in timings) else ""
        reason = (f"{rates[0]} vs {', '.join(rates[1:]) or 'nothing else that loads'} per "
                  f"{REFERENCE_MESSAGES:,} messages{started}, {where}")
    else:
        best, reason = cands[0], f"{cands[0].name}: the only verified runtime"
    return {"name": best.name, "backend": best.backend, "precision": best.precision, "reason": reason,
            "candidates": [c.name for c in cands], "timings": timings, "machine": facts, "method": METHOD,
            "measured_at": today.isoformat(timespec="seconds")}


def _save(info: ModelInfo, key: str, chosen: dict[str, Any]) -> None:
    """Add ``chosen`` to the version's cache file; a read-only models directory only costs a
    measurement per process."""
    file = choice_file(info)
    try:
        known = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({**known, key: chosen}, indent=2) + "\n", encoding="utf-8")
        tmp.replace(file)
    except OSError:
        tmp.unlink(missing_ok=True)
