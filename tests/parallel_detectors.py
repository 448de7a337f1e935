"""Detectors for the process-pool tests, registered in each worker by importing this module
(``plugins=("tests.parallel_detectors",)``): one says which process and how many threads
tagged each dialogue (and how many objects it froze), one kills its worker."""

import gc
import os

from pipeline.detectors.base import BaseDetector
from pipeline.registry import register
from pipeline.types import Detection, Span


class ProbeDetector(BaseDetector):
    name = "probe_test"
    version = "1"
    defaults = {"die_on": ""}

    def detect(self, dialogue):
        if dialogue.id == self.config["die_on"]:
            os._exit(3)  # no exception, no answer: as if the OOM killer had struck
        from pipeline.parallel import cpu_threads

        source = f"{os.getpid()}:{cpu_threads()}:{gc.get_freeze_count()}"
        return [Detection(dialogue.id, m.index, (Span(0, 1, "NAME", 1.0, source),) if m.text else ())
                for m in dialogue.messages]


@register("probe_test", "Tags each message's first character with its process and threads (tests only).")
def make_probe(config):
    return ProbeDetector(config)
