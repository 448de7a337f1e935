"""Forms of adjudication and the reports: every request, GET filters included, is parsed here."""

from __future__ import annotations

from django import forms

from annotator.models import AdjudicationItem, DetectorRun, Project
from pipeline.metrics.circularity import DEFAULT_THRESHOLD


class SpanListField(forms.Field):
    """Repeated ``span=start:end:LABEL`` values (the checked candidates)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value):
        if not value:
            return []
        out = []
        for v in value:
            try:
                start, end, label = str(v).split(":", 2)
                out.append((int(start), int(end), label))
            except ValueError:
                raise forms.ValidationError(f"Cannot read span {v!r}.") from None
        return out


class DecisionForm(forms.Form):
    span = SpanListField(required=False)
    version = forms.IntegerField(min_value=0)
    notes = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    add_start = forms.IntegerField(required=False, min_value=0)
    add_end = forms.IntegerField(required=False, min_value=1)
    add_label = forms.CharField(required=False, max_length=64)
    confirm_drop = forms.BooleanField(required=False)

    def clean(self):
        data = super().clean()
        extra = [data.get("add_start"), data.get("add_end"), data.get("add_label")]
        if any(v not in (None, "") for v in extra):
            if any(v in (None, "") for v in extra):
                raise forms.ValidationError("To add a span give its start, end and label.")
            data["span"] = [*data.get("span", []), (extra[0], extra[1], extra[2])]
        return data


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(choices=AdjudicationItem.Status.choices, required=False)
    page = forms.IntegerField(min_value=1, required=False)


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
