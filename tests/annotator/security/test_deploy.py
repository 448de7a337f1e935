"""The documented production variables pass ``manage.py check --deploy`` cleanly.

The production variables are the ones ``.env.example`` sets and the docker-compose stack passes
to the app; the README's *Production* section names each of them. Each check runs ``manage.py``
in a fresh process (settings read the environment once, at import), with nothing of the
developer's environment or ``.env`` but ``PATH``.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]

# What production needs beyond DEBUG=0 (names the README, .env.example and docker-compose agree on).
PRODUCTION_VARIABLES = [
    "DEBUG", "SECRET_KEY", "BLINDSPOT_SURROGATE_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS",
    "BEHIND_PROXY", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
]


def env_example() -> dict[str, str]:
    """``.env.example`` with its placeholder secrets replaced by real ones, as the README says to."""
    out = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    for key in ("SECRET_KEY", "BLINDSPOT_SURROGATE_KEY"):
        assert out[key].startswith("change-me"), f".env.example must not hold a real {key}"
        out[key] = secrets.token_urlsafe(50)
    return out


def compose_environment() -> dict[str, str]:
    """The app's environment in docker-compose.yml, ``${VAR:-default}`` resolved to its default."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["web"]["environment"]
    assert env == compose["services"]["worker"]["environment"]
    return {k: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(v)) for k, v in env.items()}


def check_deploy(variables: dict[str, str]) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", ""), "BLINDSPOT_ENV_FILE": "",
           "DJANGO_SETTINGS_MODULE": "annotator.settings", "BLINDSPOT_VAR_DIR": str(ROOT / "var"),
           **{k: v for k, v in variables.items() if not k.startswith(("DATABASE_URL", "REDIS_URL"))}}
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_env_example_passes_check_deploy():
    variables = env_example()
    assert variables["DEBUG"] in ("0", "false")
    assert set(PRODUCTION_VARIABLES) <= set(variables)
    result = check_deploy(variables)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_docker_compose_runs_several_workers():
    """``docker compose up --scale worker=N`` needs a worker with no fixed name and no host port."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    worker = compose["services"]["worker"]
    assert "container_name" not in worker and "ports" not in worker
    assert worker["deploy"]["replicas"] == "${BLINDSPOT_WORKERS:-2}"
    # every worker counts the others when it shares the host's cores among its tasks
    assert worker["environment"]["BLINDSPOT_HOST_WORKERS"] == worker["deploy"]["replicas"]


@pytest.mark.slow
def test_docker_compose_sets_the_production_variables():
    compose = compose_environment()
    missing = [k for k in PRODUCTION_VARIABLES if k not in compose and k not in
               ("SECRET_KEY", "BLINDSPOT_SURROGATE_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS")]
    assert missing == []
    secrets_and_hosts = {k: v for k, v in env_example().items()
                         if k in ("SECRET_KEY", "BLINDSPOT_SURROGATE_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS")}
    result = check_deploy({**secrets_and_hosts, **compose})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_a_missing_production_variable_is_reported():
    """The check is not vacuous: production without HTTPS redirects or HSTS is flagged."""
    variables = {**env_example(), "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_INCLUDE_SUBDOMAINS": "false"}
    result = check_deploy(variables)
    assert result.returncode != 0
    assert "security.W008" in result.stderr + result.stdout and "security.W005" in result.stderr + result.stdout


def test_readme_names_the_production_variables():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^    (\S.*)$", readme, flags=re.M)
    assert blocks[:2] == ["./bin/demo", "./bin/test"]  # the top two set-up commands stay as they are
    production = readme[readme.index("## Production"):]
    production = production[:production.find("\n## ", 1) if "\n## " in production[1:] else None]
    missing = [k for k in PRODUCTION_VARIABLES if k not in production]
    assert missing == []


SERVE_STATIC = """
from django.test import Client
response = Client().get("/static/css/blindspot.css", secure=True, HTTP_HOST="blindspot.example.org")
print(response.status_code, response.get("Content-Type"))
"""


@pytest.mark.slow
def test_production_serves_collected_static_files(tmp_path):
    """With DEBUG off nothing but the app itself serves /static/ under gunicorn (docker-compose)."""
    variables = {**env_example(), "STATIC_ROOT": str(tmp_path / "static"), "ALLOWED_HOSTS": "blindspot.example.org"}
    env = {"PATH": os.environ.get("PATH", ""), "BLINDSPOT_ENV_FILE": "",
           "DJANGO_SETTINGS_MODULE": "annotator.settings", "BLINDSPOT_VAR_DIR": str(tmp_path / "var"),
           **{k: v for k, v in variables.items() if not k.startswith(("DATABASE_URL", "REDIS_URL"))}}
    collect = subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert collect.returncode == 0, collect.stderr
    served = subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", SERVE_STATIC], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert served.returncode == 0, served.stderr
    status, content_type = served.stdout.strip().splitlines()[-1].split(" ", 1)
    assert (status, content_type.split(";")[0]) == ("200", "text/css")


@pytest.mark.slow
def test_migrate_on_a_fresh_clone_creates_the_sqlite_directory(tmp_path):
    """`manage.py migrate` before anything made var/ used to stop with 'unable to open database file'."""
    var = tmp_path / "fresh" / "var"
    env = {"PATH": os.environ.get("PATH", ""), "BLINDSPOT_ENV_FILE": "", "DEBUG": "1",
           "DJANGO_SETTINGS_MODULE": "annotator.settings", "BLINDSPOT_VAR_DIR": str(var)}
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (var / "blindspot.sqlite3").is_file()


def test_check_deploy_warns_when_the_surrogate_key_is_the_secret_key(settings):
    """One leaked key would then both forge sessions and reverse surrogates."""
    from django.core.checks import run_checks

    def ids() -> set[str]:
        return {m.id for m in run_checks(include_deployment_checks=True)}

    settings.SECRET_KEY = settings.BLINDSPOT_SURROGATE_KEY = secrets.token_urlsafe(50)
    assert "blindspot.W001" in ids()
    settings.BLINDSPOT_SURROGATE_KEY = secrets.token_urlsafe(50)
    assert "blindspot.W001" not in ids()
    settings.SECRET_KEY = settings.BLINDSPOT_SURROGATE_KEY
    assert "blindspot.W001" not in {m.id for m in run_checks()}  # a deployment check only
