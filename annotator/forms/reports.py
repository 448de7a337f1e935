"""Forms of the reports (agreement, circularity): every request, GET filters included, is parsed here."""

from __future__ import annotations

from django import forms

from annotator.models import DetectorRun, Project
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


class RunPickForm(forms.Form):
    """GET: which run's circularity result to show."""

    run = forms.IntegerField(min_value=1, required=False)
