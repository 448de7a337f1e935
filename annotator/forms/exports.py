from __future__ import annotations

from django import forms
from django.utils.html import escape

from annotator.models import DetectorRun
from pipeline.surrogates import MODES, SCOPES


class GoldExportForm(forms.Form):
    test_fraction = forms.FloatField(min_value=0, max_value=0.9, initial=0.2, label="Test share",
                                     help_text="Share of dialogues in the test split (split by dialogue).")
    seed = forms.IntegerField(min_value=0, initial=0, help_text="Seed of the train/test split.")


class ReleaseForm(forms.Form):
    source = forms.ChoiceField(initial="gold", help_text="Gold spans, or a finished detector run for a quick pass.")
    # Django renders help text as HTML (it may carry markup), so a literal <NAME> is escaped here.
    mode = forms.ChoiceField(choices=[(m, m) for m in MODES], initial="surrogate",
                             help_text=escape("surrogate: realistic replacements · tag: <NAME> · redact: [REDACTED]"))
    scope = forms.ChoiceField(choices=[(s, s) for s in SCOPES], initial="dialogue",
                              help_text="Keep surrogates consistent within each dialogue, or across the corpus.")
    use_llm = forms.BooleanField(required=False, label="LLM surrogates",
                                 help_text="One call per dialogue; anything invalid falls back to the offline surrogates.")
    complete_only = forms.BooleanField(required=False, initial=True, label="Only fully reviewed dialogues",
                                       help_text="Leave out dialogues with messages not yet in the gold set, "
                                                 "from gold or from a run.")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.runs = {str(r.pk): r for r in DetectorRun.objects.filter(
            project=project, status=DetectorRun.Status.SUCCEEDED).order_by("-created_at")}
        self.fields["source"].choices = [("gold", "Gold set")] + [(f"run:{pk}", f"Run {r.label}") for pk, r in self.runs.items()]

    def clean_source(self):
        value = self.cleaned_data["source"]
        if value.startswith("run:") and value[4:] not in self.runs:
            raise forms.ValidationError("Choose a finished run of this project.")
        return value

    def source_and_run(self) -> tuple[str, DetectorRun | None]:
        value = self.cleaned_data["source"]
        return ("gold", None) if value == "gold" else ("run", self.runs[value[4:]])


class ReleasePublishForm(forms.Form):
    acknowledge = forms.BooleanField(required=False, label="I acknowledge the residual risk",
                                     help_text="Needed for an unreviewed release; recorded in the audit log.")


class CandidateDecisionForm(forms.Form):
    """A reviewer's verdict on a release-review candidate, with the label a confirmation gives it."""

    verdict = forms.ChoiceField(choices=[("confirmed", "PII"), ("dismissed", "Not PII")])
    label = forms.ChoiceField(required=False)

    def __init__(self, *args, labels: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["label"].choices = [("", "")] + [(label, label) for label in labels]
