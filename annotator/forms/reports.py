"""Forms of the reports (agreement, circularity): every request, GET filters included, is parsed here."""

from __future__ import annotations

from django import forms

from annotator.models import DetectorRun, Project
from annotator.selectors.reports import DEFAULT_BOOT
from pipeline.metrics.circularity import DEFAULT_THRESHOLD


class AgreementForm(forms.Form):
    n_boot = forms.IntegerField(min_value=0, max_value=5000, initial=1000, label="Bootstrap resamples")


class CircularityForm(forms.Form):
    run = forms.ModelChoiceField(queryset=DetectorRun.objects.none(), label="Detector run")
    threshold = forms.FloatField(min_value=0, max_value=1, initial=DEFAULT_THRESHOLD, required=False,
                                 help_text="Flag an inflation ΔF1 above this (0.02 is the test proposed for PIIvot).")
    match = forms.ChoiceField(choices=[("exact", "Exact spans"), ("overlap", "Overlapping spans")],
                              initial="exact", required=False)
    n_boot = forms.IntegerField(min_value=0, max_value=5000, initial=1000, required=False,
                                label="Bootstrap resamples")

    def __init__(self, *args, project: Project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = DetectorRun.objects.filter(
            project=project, status=DetectorRun.Status.SUCCEEDED).order_by("-created_at")
        self.fields["run"].label_from_instance = lambda r: r.label

    def request_args(self) -> dict:
        """The keyword arguments of ``circularity_request`` (less project and user), defaults filled in."""
        d = self.cleaned_data
        return {"run": d["run"], "threshold": d["threshold"] if d["threshold"] is not None else DEFAULT_THRESHOLD,
                "match": d["match"] or "exact", "n_boot": d["n_boot"] if d["n_boot"] is not None else DEFAULT_BOOT}


class RunPickForm(forms.Form):
    """GET: which run's circularity result to show."""

    run = forms.IntegerField(min_value=1, required=False)
