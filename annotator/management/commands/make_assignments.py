"""Generate assignments from a sampling plan: ``manage.py make_assignments --project SLUG ...``."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.services.assignments import (
    PlanError,
    plan_create,
    plan_job_run,
    plan_start,
    project_annotators,
)
from pipeline import assignment as algo


class Command(BaseCommand):
    help = ("Assign messages to annotators: every flagged message of the chosen runs, plus an optional "
            "random audit sample of unflagged ones, a random sample of whole dialogues, or the messages a "
            "tagger run was least sure of plus an audit sample; each item to "
            "k distinct annotators, balanced and reproducible from the seed.")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--strategy", choices=algo.STRATEGIES, required=True)
        parser.add_argument("--runs", default="", help="Comma-separated detector run ids (flagged strategies).")
        parser.add_argument("--audit-rate", type=float, default=0.0, help="Share of unflagged messages to audit.")
        parser.add_argument("--dialogues", type=int, default=0, help="Dialogues to sample (dialogues strategy).")
        parser.add_argument("--budget", type=int, default=0,
                            help="Messages to plan, audit included (uncertain strategy; rank by the tagger run in --runs).")
        parser.add_argument("--audit-share", type=float, default=0.2,
                            help="Share of the budget drawn from unflagged messages (uncertain strategy).")
        parser.add_argument("--annotators", default="", help="Comma-separated usernames (default: every annotator).")
        parser.add_argument("--k", type=int, default=None, help="Annotators per item (default: the project's overlap).")
        parser.add_argument("--seed", type=int, default=None, help="Seed (default: a fresh random one, printed).")
        parser.add_argument("--dry-run", action="store_true", help="Print the summary, write nothing.")
        parser.add_argument("--json", action="store_true", dest="as_json",
                            help="Print the plan's summary as JSON (for scripts) instead of a table.")

    def handle(self, *args, **opts):
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {opts['project']!r}.")
        if opts["annotators"]:
            names = [n.strip() for n in opts["annotators"].split(",") if n.strip()]
            users = list(get_user_model().objects.filter(username__in=names))
            missing = sorted(set(names) - {u.username for u in users})
            if missing:
                raise CommandError(f"No such users: {', '.join(missing)}.")
        else:
            users = list(project_annotators(project))
        try:
            runs = [int(r) for r in opts["runs"].split(",") if r.strip()]
        except ValueError:
            raise CommandError("--runs takes run ids separated by commas, e.g. 3,5.") from None
        args = {"project": project, "strategy": opts["strategy"], "annotators": users, "k": opts["k"],
                "seed": opts["seed"], "runs": runs, "audit_rate": opts["audit_rate"], "n_dialogues": opts["dialogues"],
                "budget": opts["budget"], "audit_share": opts["audit_share"]}
        try:
            plan = plan_create(**args, dry_run=True) if opts["dry_run"] else _build(args)
        except PlanError as exc:
            raise CommandError(str(exc)) from None
        head = "Dry run, nothing written" if opts["dry_run"] else f"Plan #{plan.pk}"
        self.stdout.write(f"{head}: seed {plan.seed}")
        if opts["as_json"]:
            self.stdout.write(json.dumps(plan.summary, indent=1, sort_keys=True))
        else:
            self.stdout.write("\n".join(summary_lines(plan.summary)))


def _build(args: dict):
    """The Assignments page's job, run here and waited for (Ctrl-C marks it failed)."""
    job = plan_start(**args, by=None, queue=False)
    plan = plan_job_run(job)
    if plan is None:
        job.refresh_from_db()
        raise PlanError(job.error or f"Plan job #{job.pk} {job.status}.")
    return plan


def summary_lines(summary: dict) -> list[str]:
    """The plan's summary for people, in the order the Assignments page shows it."""
    s = summary
    rows = [("Strategy", f"{s.get('strategy')}, k = {s.get('k')}, {s.get('annotators', 0)} annotator(s), "
                         f"{s.get('mode', '')}".rstrip(", ")),
            ("Items in the pool", s.get("pool_items"))]
    if s.get("flagged") is not None and s.get("strategy") != algo.DIALOGUES:
        rows.append(("Flagged", s["flagged"]))
    if s.get("uncertain") is not None:
        rows.append(("Least sure", f"{s['uncertain']} of {s.get('scored')} messages scored by run "
                                   f"#{s.get('uncertainty_run')} ({s.get('uncertain_flagged', 0)} of them flagged)"))
    if s.get("audit_sampled") is not None:
        pool = s.get("audit_pool", s.get("unflagged_pool"))
        rate = f"share {s['audit_share']} of {s['budget']}" if "budget" in s else f"rate {s.get('audit_rate')}"
        rows.append(("Audit sample", f"{s['audit_sampled']} of {pool} unflagged messages ({rate})"))
    if s.get("dialogues") is not None:
        rows.append(("Dialogues", f"{s['dialogues']} of {s.get('pool_dialogues')}"))
    rows += [("Items sampled", s.get("items")), ("Already covered", s.get("items_already_covered")),
             ("Short of k", s.get("items_short_of_k")), ("Assignments", s.get("assignments"))]
    width = max(len(name) for name, _ in rows)
    lines = [f"  {name.ljust(width)}  {value}" for name, value in rows]
    people = s.get("per_annotator") or {}
    if people:
        name_w = max(len("annotator"), *(len(n) for n in people))
        lines.append(f"  {'annotator'.ljust(name_w)}  items  blind  aware")
        lines += [f"  {n.ljust(name_w)}  {r.get('items', 0):>5}  {r.get('blind', 0):>5}  {r.get('aware', 0):>5}"
                  for n, r in sorted(people.items())]
    return lines
