"""Every ``manage.py`` command the README shows runs as printed after ``./bin/demo``.

The README is parsed: its full command lines (``.venv/bin/python manage.py …``) run exactly as
printed, and each row of its command table runs with the placeholders (SLUG, PATH, RUN_ID, …)
filled in below. They run in fresh processes against a temporary "demo" (migrate + demo_setup, as
``bin/demo`` does, without training) on a temporary SQLite database, with small generated files.

No environment variable of the test process reaches them (the suite itself runs with DEBUG=1 and a
test SECRET_KEY): they get PATH, HOME and BLINDSPOT_ENV_FILE only, naming a ``.env`` written by
``python -m annotator.envfile``, the writer ``bin/demo`` calls. That file is what makes them work.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from annotator import envfile

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
PREFIX = ".venv/bin/python manage.py "

# Placeholders of the command table, and what they become in the temporary demo.
FILL = {
    "SLUG": "demo", "PATH": "more.jsonl", "CORPUS.jsonl": "transcripts.jsonl", "GOLD.jsonl": "transcripts.jsonl",
    "PRED.jsonl": "pred.jsonl", "RELEASE.jsonl": "release.jsonl", "RUN_ID": "1", "USER": "annotator1",
    "ROLE": "adjudicator",
}
FILL_FOR = {"create_project": {"NAME": "Second study"}, "detect": {"NAME": "rules"},
            "run_detector": {"NAME": "rules"}, "tagger_activate": {"VERSION": "@trained-version"}}
# What "…" stands for, and what keeps training to seconds.
EXTRA = {
    "make_assignments": ["--strategy", "dialogues", "--dialogues", "2"],
    # a usable version (deidentify picks only one without activation blockers): no time cut, no dev floor
    "train_tagger": ["--no-gold", "--synthetic", "3", "--epochs", "1", "--layers", "1", "--min-dev-score", "0"],
}
# The order a user would follow (a command may need what an earlier one made).
ORDER = ["create_project", "add_member", "api_token", "import_corpus", "detect", "evaluate", "segments_grid", "run_detector",
         "make_assignments", "circularity_report", "export_gold", "build_release", "train_tagger", "tagger_versions",
         "tagger_activate", "deidentify"]
NEEDS_TAGGER = {"train_tagger", "tagger_activate", "deidentify"}
# The version tagger_activate names: the one train_tagger made, known only once it ran.
TRAINED_VERSION = "@trained-version"
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(\.jsonl)?$")


def readme_table() -> dict[str, str]:
    """``{command: synopsis}`` from the README's command table."""
    rows = re.findall(r"^\| `([a-z_]+)([^`]*)` \|", README.read_text(encoding="utf-8"), re.M)
    assert rows, "the README has no command table"
    return {name: rest.strip() for name, rest in rows}


def readme_lines() -> list[str]:
    """The README's full ``manage.py`` command lines: in code blocks and in inline code."""
    text = README.read_text(encoding="utf-8")
    found = [m.strip() for m in re.findall(r"^ {4}(\.venv/bin/python manage\.py .+)$", text, re.M)]
    found += re.findall(r"`(\.venv/bin/python manage\.py [^`]+)`", text)
    assert found, "the README shows no manage.py command line"
    return found


def table_argv(name: str, synopsis: str) -> list[str]:
    required = re.sub(r"\[[^\]]*\]", " ", synopsis).replace("…", " ")
    argv = [name]
    for token in shlex.split(required):
        if PLACEHOLDER.match(token):
            fill = FILL_FOR.get(name, {}).get(token, FILL.get(token))
            assert fill is not None, f"README row {name!r}: teach this test what {token} is"
            argv.append(fill)
        else:
            argv.append(token)
    return argv + EXTRA.get(name, [])


def planned() -> list[tuple[str, list[str]]]:
    """Every command to run, in ORDER: full README lines first, then the table rows."""
    table = readme_table()
    unknown = sorted(set(table) - set(ORDER))
    assert not unknown, f"README commands this test does not know where to run: {unknown}"
    plan: list[tuple[int, int, str, list[str]]] = []
    for line in readme_lines():
        argv = shlex.split(line[len(PREFIX):])
        if argv[0] == "COMMAND":
            plan += [(-1, 0, f"{name} --help", [name, *argv[1:]]) for name in table]
        else:
            assert argv[0] in ORDER, f"README line {line!r}: unknown command"
            plan.append((ORDER.index(argv[0]), 0, line, argv))
    plan += [(ORDER.index(name), 1, f"{name} {synopsis}", table_argv(name, synopsis))
             for name, synopsis in table.items()]
    return [(label, argv) for _, _, label, argv in sorted(plan, key=lambda p: (p[0], p[1]))]


class Demo:
    """A temporary checkout state after ``./bin/demo``: .env, database, generated files."""

    def __init__(self, root: Path):
        self.root = root
        self.env_file = root / ".env"
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "BLINDSPOT_ENV_FILE": str(self.env_file)}

    def python(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=self.root, env=env or self.env,
                              capture_output=True, text=True, timeout=900)

    def manage(self, argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
        return self.python(str(ROOT / "manage.py"), *argv, env=env)


def _ok(result: subprocess.CompletedProcess) -> bool:
    return result.returncode == 0 and "Traceback" not in result.stdout + result.stderr


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Demo:
    demo = Demo(tmp_path_factory.mktemp("readme-demo"))
    wrote = subprocess.run([sys.executable, "-m", "annotator.envfile", str(demo.env_file)], cwd=ROOT,
                           env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert wrote.returncode == 0, wrote.stderr
    with demo.env_file.open("a", encoding="utf-8") as fh:  # the temporary database and files
        fh.write(f"BLINDSPOT_VAR_DIR={demo.root / 'var'}\n")
    (demo.root / "var").mkdir()  # as bin/demo does
    for argv in (["migrate", "--noinput"], ["demo_setup"]):
        result = demo.manage(argv)
        assert _ok(result), result.stdout + result.stderr
    for name, seed in (("transcripts.jsonl", "3"), ("more.jsonl", "4")):
        result = demo.python("-m", "pipeline.synthetic", "--dialogues", "6", "--max-messages", "10",
                             "--seed", seed, "--out", name, env={**demo.env, "PYTHONPATH": str(ROOT)})
        assert result.returncode == 0, result.stderr
    return demo


def _trained(demo: Demo, argv: list[str]) -> list[str]:
    """``argv`` with the newest version under the demo's models directory for TRAINED_VERSION."""
    if TRAINED_VERSION not in argv:
        return argv
    newest = max(p.name for p in (demo.root / "var" / "models" / "demo").iterdir())
    return [newest if a == TRAINED_VERSION else a for a in argv]


def _run_all(demo: Demo, commands: list[tuple[str, list[str]]]) -> None:
    failures = []
    for label, argv in commands:
        argv = _trained(demo, argv)
        result = demo.manage(argv)
        if not _ok(result):
            failures.append(f"$ {label}\n  ran: {shlex.join(argv)}\n{result.stdout[-1500:]}{result.stderr[-3000:]}")
    assert not failures, "README commands that fail as printed:\n\n" + "\n\n".join(failures)


@pytest.mark.slow
def test_every_readme_command_runs_as_printed_after_the_demo(demo):
    commands = [(label, argv) for label, argv in planned() if argv[0] not in NEEDS_TAGGER or "--help" in argv]
    assert len(commands) >= 2 * len(readme_table()) - len(NEEDS_TAGGER)
    _run_all(demo, commands)


@pytest.mark.slow
def test_readme_tagger_commands_run_as_printed(demo):
    commands = [(label, argv) for label, argv in planned() if argv[0] in NEEDS_TAGGER and "--help" not in argv]
    assert [argv[0] for _, argv in commands] == ["train_tagger", "tagger_activate", "deidentify"]
    _run_all(demo, commands)


def test_the_planned_commands_fill_every_placeholder():
    for label, argv in planned():
        assert not [t for t in argv[1:] if PLACEHOLDER.match(t) and t != "COMMAND"], label


@pytest.mark.slow
def test_without_env_file_a_missing_secret_is_the_one_system_check_error(demo):
    result = demo.manage(["export_gold", "--project", "demo"], env={**demo.env, "BLINDSPOT_ENV_FILE": ""})
    assert result.returncode == 1
    assert "(blindspot.E001) SECRET_KEY is not set." in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.slow
def test_the_environment_wins_over_env_file(demo):
    show = ["shell", "-c", "from django.conf import settings; print('=>', settings.DEBUG, settings.SECRET_KEY)"]

    def shown(result) -> list[str]:
        assert result.returncode == 0, result.stderr
        return next(line for line in result.stdout.splitlines() if line.startswith("=> ")).split()[1:]

    debug, secret = shown(demo.manage(show))
    assert debug == "True" and f"SECRET_KEY={secret}\n" in demo.env_file.read_text()
    overridden = demo.manage(show, env={**demo.env, "DEBUG": "0", "SECRET_KEY": "from-the-environment"})
    assert shown(overridden) == ["False", "from-the-environment"]


def test_the_suite_does_not_read_the_developers_env_file(settings):
    assert os.environ["BLINDSPOT_ENV_FILE"] == "" and settings.ENV_FILE == ""


def test_env_file_is_written_once_private_with_fresh_secrets(tmp_path):
    path = tmp_path / ".env"
    assert envfile.env_file_write(path) is True
    first = path.read_text()
    assert "DEBUG=1\n" in first and stat.S_IMODE(path.stat().st_mode) == 0o600
    values = dict(line.split("=", 1) for line in first.splitlines() if line and not line.startswith("#"))
    assert len(values["SECRET_KEY"]) >= 50 and len(values["BLINDSPOT_SURROGATE_KEY"]) >= 32
    assert envfile.env_file_write(path) is False and path.read_text() == first
    other = tmp_path / "other.env"
    envfile.env_file_write(other)
    assert other.read_text() != first


def test_env_file_stays_out_of_git():
    ignored = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=ROOT)
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.returncode == 0
