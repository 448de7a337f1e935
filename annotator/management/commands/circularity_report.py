"""The circularity check from the command line: ``manage.py circularity_report --project SLUG --run RUN_ID``.

The result is stored like one computed from the page (a finished report job), so the report page
shows it; ``--no-store`` only prints.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.models import DetectorRun, Project
from annotator.services.adjudication import gold_merge_ready
from annotator.services.reports import ReportError, circularity_compute, circularity_store
from pipeline.metrics.circularity import DEFAULT_THRESHOLD


def _fmt(e) -> str:
    return "n/a" if e is None else f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"


class Command(BaseCommand):
    help = ("Score a detector run against gold from blind annotations only and from aware annotations "
            "only, on the same items, and report the inflation ΔF1 = F1(aware) − F1(blind) with its "
            "bootstrap interval.")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--run", type=int, required=True, help="Detector run id.")
        parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
        parser.add_argument("--match", choices=("exact", "overlap"), default="exact")
        parser.add_argument("--boot", type=int, default=1000, help="Bootstrap resamples.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="Print the whole report as JSON.")
        parser.add_argument("--merge", action="store_true",
                            help="Merge finished items into gold first (counts adjudications so far).")
        parser.add_argument("--fail-on-flag", action="store_true", help="Exit with status 3 when flagged.")
        parser.add_argument("--no-store", action="store_true",
                            help="Print only; do not keep the result for the report page.")

    def handle(self, *args, **opts):
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {opts['project']!r}.")
        run = DetectorRun.objects.filter(pk=opts["run"], project=project).first()
        if run is None:
            raise CommandError(f"Project {project.slug} has no run #{opts['run']}.")
        if opts["merge"]:
            gold_merge_ready(project=project)
        try:
            report = circularity_compute(project=project, run=run, threshold=opts["threshold"],
                                         match=opts["match"], n_boot=opts["boot"], seed=opts["seed"])
        except ReportError as exc:
            raise CommandError(str(exc)) from None
        job = None
        if not opts["no_store"]:
            job = circularity_store(project=project, run=run, report=report, params={
                "threshold": opts["threshold"], "match": opts["match"], "n_boot": opts["boot"],
                "seed": opts["seed"], "source": "command"})
        if opts["json"]:
            self.stdout.write(json.dumps(report.to_dict(), indent=1))
        else:
            w = self.stdout.write
            w(f"Circularity check — project {project.slug}, run {run.label}, {report.match} matching")
            w(f"items: {report.n_items}, labelled both blind and aware: {report.n_paired_items}")
            if report.blind is not None and report.aware is not None:
                for name, sc in (("blind gold", report.blind), ("aware gold", report.aware)):
                    w(f"  {name:11} P {_fmt(sc.precision)}  R {_fmt(sc.recall)}  F1 {_fmt(sc.f1)}")
                flag = "FLAGGED" if report.flagged else "not flagged"
                w(f"  ΔF1 (aware − blind): {_fmt(report.delta_f1)} — {flag} (flagged when the interval "
                  f"is above 0 and the estimate above {report.threshold})")
            e = report.exposure
            w(f"randomization unit: {report.randomization_unit or 'unknown'}; intervals resample "
              f"{report.cluster_unit}s; exposure: {e.get('exposed', 0)} of {e.get('blind', 0)} blind "
              f"annotations; weighted by the sampling design: "
              f"{'yes' if report.weighting.get('weighted') else 'no'}")
            for cond, est in report.agreement_by_condition.items():
                w(f"  annotator–model span F1, {cond}: {_fmt(est)}")
            w("")
            w(report.summary)
            if job is not None:
                w(f"Stored as report #{job.pk}: the circularity page shows it.")
        if opts["fail_on_flag"] and report.flagged:
            raise SystemExit(3)
