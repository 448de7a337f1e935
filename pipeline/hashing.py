"""The SHA-256 of a file, read in 1 MiB blocks: what manifests and model file lists record."""

from __future__ import annotations

import hashlib
from pathlib import Path

BLOCK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """The hex SHA-256 of the file at ``path``, without holding it in memory."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            h.update(block)
    return h.hexdigest()
