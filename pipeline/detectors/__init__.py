"""Detectors: each one module, each registered by name in :mod:`pipeline.registry`."""
