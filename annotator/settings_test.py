"""Settings for the test suite: the real settings with a test secret and a fast password hasher."""

import os

os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")

from annotator.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
BLINDSPOT_EAGER_IN_THREAD = False
