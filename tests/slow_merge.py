"""Makes gold merges slow, one message per transaction, for the worker-kill test (a worker loads
it through BLINDSPOT_DETECTOR_PLUGINS, so only that worker's merges are slowed down)."""

import os
import time

from annotator.services import adjudication

adjudication.BATCH = 1
_merge_batch = adjudication._merge_batch


def _slow_merge_batch(*args):
    out = _merge_batch(*args)
    time.sleep(float(os.environ.get("SLOW_MERGE_SECONDS", "1")))  # inside the batch's transaction
    return out


adjudication._merge_batch = _slow_merge_batch
