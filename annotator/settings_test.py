"""Settings for the test suite: the real settings with a test secret and a fast password hasher."""

import os

# Never read the developer's .env: it could point the suite at another database, broker or key.
# Subprocesses the tests start (a Celery worker) inherit this too.
os.environ["BLINDSPOT_ENV_FILE"] = ""
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")

from annotator.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
BLINDSPOT_EAGER_IN_THREAD = False
# Tests collect no static files: look them up per request instead of warning that STATIC_ROOT is missing.
WHITENOISE_AUTOREFRESH = True
