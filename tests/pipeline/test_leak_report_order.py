"""The release's leak report must not depend on the order a set of originals iterates in.

Pass 1 collects the originals in a set; when one name occurs as "Will" and as "will", the one
registered first decides whether the leak check scans the corpus for it or checks it in place.
A set's order follows the string hash, which changes with every interpreter
(``PYTHONHASHSEED``), so the report changed from run to run (seen as a release from one worker
differing from a release from two). Several interpreters with different hash seeds must agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAIRS = ("Will", "May", "Grace", "Bill", "Rose", "Mark", "Frank", "Hope", "Art", "Sunny")


def _corpus(path: Path) -> None:
    rows = []
    for i, name in enumerate(PAIRS):
        messages = []
        for text in (f"hi {name} how are you", f"ok {name.lower()} lets start"):
            start = text.index(name) if name in text else text.index(name.lower())
            messages.append(
                {
                    "speaker": "Tutor",
                    "text": text,
                    "spans": [{"start": start, "end": start + len(name), "label": "NAME"}],
                }
            )
        rows.append({"id": f"d{i}", "messages": messages})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _leaks(corpus: Path, out_dir: Path, seed: int) -> bytes:
    out_dir.mkdir()
    code = (
        "import sys; from pipeline.surrogates.batch import deidentify_file; "
        "deidentify_file(sys.argv[1], sys.argv[2], key='leak-order-test-key')"
    )
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    subprocess.run(
        [sys.executable, "-c", code, str(corpus), str(out_dir / "release.jsonl")],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return (out_dir / "release.leaks.json").read_bytes()


def test_the_leak_report_is_the_same_whatever_the_hash_seed(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    _corpus(corpus)
    reports = {seed: _leaks(corpus, tmp_path / f"seed{seed}", seed) for seed in range(4)}
    assert len(set(reports.values())) == 1, {s: json.loads(r) for s, r in reports.items()}
    report = json.loads(reports[0])
    assert report["originals_checked"] + report["originals_checked_in_place"] == len(PAIRS)
