"""Write the local ``.env`` that ``bin/demo`` leaves beside manage.py, once.

Settings read that file (variables set in the environment win), so every ``manage.py`` command a
user types after ``./bin/demo`` gets the same DEBUG and secrets as the demo server. The secrets are
generated here, per checkout, and never committed (``.gitignore`` lists ``.env``).

    python -m annotator.envfile [PATH]      # default: .env beside manage.py; no-op if it exists
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

DEFAULT_PATH = Path(__file__).resolve().parent.parent / ".env"


def env_file_text(*, debug: bool = True) -> str:
    return (
        "# Written once by bin/demo for this checkout; never commit it (.gitignore lists it).\n"
        "# Variables set in the environment win over these; .env.example lists the others.\n"
        f"DEBUG={1 if debug else 0}\n"
        f"SECRET_KEY={secrets.token_urlsafe(50)}\n"
        f"BLINDSPOT_SURROGATE_KEY={secrets.token_urlsafe(32)}\n"
    )


def env_file_write(path: Path = DEFAULT_PATH, *, debug: bool = True) -> bool:
    """Create ``path`` (owner-readable only) unless it exists; True when written."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(env_file_text(debug=debug))
    return True


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    if env_file_write(path):
        print(f"Wrote {path} (DEBUG=1 and generated secrets for this checkout).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
