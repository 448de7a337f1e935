"""A deliberately slow detector for queue tests (loaded by workers via BLINDSPOT_DETECTOR_PLUGINS)."""

import os
import time

from pipeline.detectors.base import BaseDetector
from pipeline.registry import register
from pipeline.types import Detection, Span


class SlowDetector(BaseDetector):
    name = "slow_test"
    version = "1"
    defaults = {"seconds_per_dialogue": 0.2, "fail_on": ""}

    def detect(self, dialogue):
        time.sleep(self.config["seconds_per_dialogue"])
        if self.config["fail_on"] and dialogue.id == self.config["fail_on"]:
            raise RuntimeError(f"boom on {dialogue.id} (pid {os.getpid()})")
        out = []
        for m in dialogue.messages:
            first = m.text.split()[0] if m.text.split() else ""
            start = m.text.find(first)
            spans = (Span(start, start + len(first), "NAME", 0.5),) if first else ()
            out.append(Detection(dialogue.id, m.index, spans))
        return out


@register("slow_test", "Sleeps, then tags each message's first word (tests only).")
def make_slow(config):
    return SlowDetector(config)
