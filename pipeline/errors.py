"""The ground floor's errors: what any layer of pipeline/ may raise, importing nothing above.

Kept apart from :mod:`pipeline.detectors.base` so that low modules (the registry, the encoder)
can raise them without importing the detector layer above them.
"""

from __future__ import annotations


class DetectorError(RuntimeError):
    """A detector could not process an item; the message says why, for the run's error field."""


class ConfigError(ValueError):
    """A detector was given a config it does not understand."""
