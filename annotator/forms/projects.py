from __future__ import annotations

import json

from django import forms
from django.contrib.auth import get_user_model

from annotator.models import DetectorRun, Project, Role
from annotator.models.corpus import default_taxonomy, validate_taxonomy


class ProjectForm(forms.ModelForm):
    taxonomy = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}),
        help_text='JSON list: [{"label": "NAME", "description": "...", "key": "n", "color": "#fca5a5"}, …]; '
                  "left empty, the default labels.",
    )

    class Meta:
        model = Project
        fields = [
            "name", "slug", "description", "visibility_mode", "overlap_k", "context_window",
            "labelling_policy", "merge_rule", "show_predictions_to_adjudicators", "second_opinion_tagger", "second_opinion_presidio",
            "suggestion_runs", "guidelines",
            "taxonomy",
        ]
        widgets = {"suggestion_runs": forms.CheckboxSelectMultiple, "guidelines": forms.Textarea(attrs={"rows": 10}), "description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance and self.instance.pk:
            self.initial["taxonomy"] = json.dumps(self.instance.taxonomy, indent=1)
            runs = self.fields["suggestion_runs"]
            runs.queryset = DetectorRun.objects.filter(
                project=self.instance, status=DetectorRun.Status.SUCCEEDED).order_by("-pk")
            runs.label_from_instance = lambda r: r.label
            runs.help_text = ("In the aware condition annotators see these runs' predictions as suggestions "
                              "(a plan built from flagged messages sets them when none is chosen). "
                              "Blind assignments never show them.")
        else:  # a new project has no runs yet, and starts from the default labels
            del self.fields["suggestion_runs"]
            self.initial.setdefault("taxonomy", json.dumps(default_taxonomy(), indent=1))

    def clean_taxonomy(self):
        raw = self.cleaned_data["taxonomy"].strip()
        if not raw:
            return default_taxonomy()
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}).") from None
        validate_taxonomy(value)
        return value


class ImportForm(forms.Form):
    file = forms.FileField(help_text="JSONL (one dialogue per line), CSV (dialogue_id, seq, speaker, text), "
                                     "Label Studio task JSON, doccano JSONL or a spaCy DocBin (.spacy).")
    format = forms.ChoiceField(
        choices=[("", "Guess from the file name and contents"), ("jsonl", "Blindspot JSONL"), ("csv", "CSV"),
                 ("labelstudio", "Label Studio task JSON"), ("doccano", "doccano JSONL"),
                 ("spacy", "spaCy DocBin (.spacy)")],
        required=False,
    )
    spans_as = forms.ChoiceField(
        choices=[("run", "Spans in the file become a detector run (audit them)"),
                 ("gold", "Spans in the file are gold"), ("ignore", "Ignore spans in the file")],
        initial="run",
    )
    skip_existing = forms.BooleanField(
        required=False, help_text="Add only dialogues whose id is new (otherwise a re-import is refused)."
    )


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices)

    def clean_username(self):
        name = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise forms.ValidationError(f"There is no user called {name!r}; invite them below instead.")
        return user


class MemberRemoveForm(forms.Form):
    """``expected``: the role the page showed, so a change made meanwhile is not overwritten."""

    expected = forms.ChoiceField(choices=Role.choices, widget=forms.HiddenInput)


class MemberRoleForm(MemberRemoveForm):
    role = forms.ChoiceField(choices=Role.choices)


class DialogueFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
    page = forms.IntegerField(required=False, min_value=1)
