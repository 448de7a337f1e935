"""A nightly pipeline through Blindspot's API: import -> run -> wait -> plan -> release -> download.

    BLINDSPOT_URL=https://blindspot.example.org BLINDSPOT_TOKEN=bs_... \\
        python api_client.py SLUG transcripts.jsonl release/

Needs only ``requests``. Each POST that starts a job carries an Idempotency-Key, so a retried
request never starts a second job; each job is polled until it finishes.
"""

import hashlib
import os
import sys
import time
import uuid
from pathlib import Path

import requests


class Blindspot:
    def __init__(self, base: str, token: str):
        self.base = base.rstrip("/")
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, url: str, **kwargs) -> requests.Response:
        response = self.http.request(method, self.base + url, timeout=120, **kwargs)
        if response.status_code >= 400:  # every refusal is JSON: {"detail": ..., "errors": ...}
            sys.exit(f"{method} {url}: {response.status_code} {response.json()['detail']}")
        return response

    def start(self, url: str, **kwargs) -> dict:
        """POST something that starts a job; the key makes retrying this very request safe."""
        return self.call("POST", url, headers={"Idempotency-Key": str(uuid.uuid4())}, **kwargs).json()

    def wait(self, job: dict) -> dict:
        while job["status"] in ("queued", "running"):
            time.sleep(1)
            job = self.call("GET", job["url"]).json()
        if job["status"] != "succeeded":
            sys.exit(f"{job['url']} {job['status']}:\n{job['error']}")  # an import's error lists each bad line
        return job

    def download(self, file: dict, out: Path) -> Path:
        path = out / file["name"]
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.call("GET", file["url"], stream=True) as response, path.open("wb") as sink:
            for chunk in response.iter_content(1 << 16):
                sink.write(chunk)
        if hashlib.sha256(path.read_bytes()).hexdigest() != file["sha256"]:
            sys.exit(f"{path}: the download does not match its checksum")
        return path


def main(slug: str, corpus: str, out: str) -> None:
    bs = Blindspot(os.environ["BLINDSPOT_URL"], os.environ["BLINDSPOT_TOKEN"])
    project = f"/api/v1/projects/{slug}"
    with open(corpus, "rb") as upload:
        job = bs.wait(bs.start(f"{project}/imports/", files={"file": upload},
                               data={"spans_as": "gold", "skip_existing": "true"}))
    print(f"imported {job['result']['dialogues']} dialogue(s), skipped {job['result']['skipped']}")
    run = bs.wait(bs.start(f"{project}/runs/", json={"detector": "rules"}))
    print(f"run {run['id']}: {sum(n for _, n in run['label_counts'])} span(s) flagged")
    plan = bs.wait(bs.start(f"{project}/plans/", json={"strategy": "flagged", "runs": [run["id"]]}))
    print(f"plan {plan['result']['plan_id']}: {plan['result']['assignments']} assignment(s)")
    release = bs.wait(bs.start(f"{project}/exports/", json={"kind": "release", "source": "gold"}))
    print(f"release v{release['version']}: {release['report']['leaks']['leaks']} leak(s); "
          f"{release['report']['residual_risk'].get('sentence', '')}")
    for file in release["files"]:
        print(f"downloaded {bs.download(file, Path(out))}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
