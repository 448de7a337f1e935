from __future__ import annotations

import re
from collections import Counter

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model

from annotator.models import DetectorRun, Project, Role
from annotator.models.corpus import is_color, validate_taxonomy
from pipeline.speakers import DEFAULT_ROLE_LABELS
from pipeline.surrogates.fields import FieldPolicy


class ProjectForm(forms.ModelForm):
    """The project's settings; its labels are the :data:`TaxonomyFormSet` beside it (one row each)."""

    class Meta:
        model = Project
        fields = [
            "name", "slug", "description", "visibility_mode", "overlap_k", "context_window",
            "labelling_policy", "merge_rule", "show_predictions_to_adjudicators", "second_opinion_tagger", "second_opinion_presidio",
            "suggestion_runs", "guidelines",
        ]
        widgets = {"suggestion_runs": forms.CheckboxSelectMultiple, "guidelines": forms.Textarea(attrs={"rows": 10}), "description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance and self.instance.pk:
            runs = self.fields["suggestion_runs"]
            runs.queryset = DetectorRun.objects.filter(
                project=self.instance, status=DetectorRun.Status.SUCCEEDED).order_by("-pk")
            runs.label_from_instance = lambda r: r.label
            runs.help_text = ("In the aware condition annotators see these runs' predictions as suggestions "
                              "(a plan built from flagged messages sets them when none is chosen). "
                              "Blind assignments never show them.")
        else:  # a new project has no runs yet
            del self.fields["suggestion_runs"]


class LabelForm(forms.Form):
    """One label of the taxonomy: its name, what it means, its colour (its key is its row)."""

    label = forms.CharField(max_length=60)
    description = forms.CharField(required=False, max_length=500)
    color = forms.CharField(required=False, label="Colour",
                            widget=forms.TextInput(attrs={"placeholder": "#rrggbb", "class": "mono"}))

    def clean_color(self):
        color = self.cleaned_data["color"].strip()
        if color and not is_color(color):
            raise forms.ValidationError("A colour is #rrggbb (six hex digits), like #fca5a5.")
        return color

    def entry(self) -> dict:
        d = self.cleaned_data
        return {"label": d["label"], "description": d["description"],
                **({"color": d["color"]} if d["color"] else {})}


class BaseTaxonomyFormSet(forms.BaseFormSet):
    """The labels, a row each (an empty row adds one, a ticked Delete removes one); a label used
    twice is marked on each row that uses it, and the whole passes the one taxonomy check."""

    def _kept(self) -> list[LabelForm]:
        return [f for f in self.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")]

    def clean(self):
        kept = self._kept()
        if not kept and not any(self.errors):
            raise forms.ValidationError("Keep at least one label.")
        values = [(f, f.cleaned_data["label"]) for f in kept if "label" in f.cleaned_data]
        counts = Counter(v for _, v in values)
        for f, v in values:
            if counts[v] > 1:
                f.add_error("label", f"{v!r} is used by another label too.")
        if not any(self.errors):
            validate_taxonomy(self.taxonomy())  # the one check of a taxonomy (a ValidationError here)

    def taxonomy(self) -> list[dict]:
        """The labels as the project stores them, in the rows' order."""
        return [f.entry() for f in self._kept()]


TaxonomyFormSet = forms.formset_factory(LabelForm, formset=BaseTaxonomyFormSet, extra=1, can_delete=True)


def taxonomy_formset(data=None, *, taxonomy: list[dict]) -> BaseTaxonomyFormSet:
    """The settings page's label rows, filled with ``taxonomy`` (prefix ``labels``)."""
    initial = [{k: entry.get(k, "") for k in ("label", "description", "color")} for entry in taxonomy]
    return TaxonomyFormSet(data, initial=initial, prefix="labels")


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

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = settings.BLINDSPOT_IMPORT_MAX_BYTES
        if upload.size > limit:
            raise forms.ValidationError(f"The file is {upload.size:,} bytes, over the {limit:,}-byte limit.")
        return upload


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


class ReleaseFieldsForm(forms.Form):
    """How a release treats the record around the texts (:class:`~pipeline.surrogates.fields.FieldPolicy`):
    one choice per field, a policy per metadata key, the words that make a speaker label a role."""

    speaker = forms.ChoiceField(label="Speaker labels", choices=[
        ("pseudonym", "A label that names someone gets that person's surrogate; role labels stay"),
        ("keep", "Ship every label as it came")])
    id = forms.ChoiceField(label="Dialogue ids", choices=[
        ("keyed", "An opaque id keyed by the surrogate key (the original in the private mapping)"),
        ("keep", "Ship every id as it came")])
    ts = forms.ChoiceField(label="Timestamps", choices=[
        ("shift", "Move by the dialogue's date offset (intervals kept)"), ("keep", "Ship as they came"),
        ("drop", "Leave out")])
    meta = forms.ChoiceField(label="Metadata", choices=[
        ("scan", "Sweep strings like text (numbers and booleans kept)"), ("keep", "Ship as it came"),
        ("drop", "Leave out")], help_text="For every metadata key that the list below does not name.")
    meta_keys = forms.CharField(
        label="Metadata keys", required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
        help_text="One key a line as key: scan, keep or drop (a nested key as school.name).")
    role_labels = forms.CharField(
        label="Role words", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="A speaker label is a role, not a name, when every word of it (digits and single letters "
                  "aside) is one of these. Empty: the default list.")

    def __init__(self, data=None, *, policy: FieldPolicy):
        initial = {**policy.to_dict(), "role_labels": ", ".join(policy.role_labels),
                   "meta_keys": "\n".join(f"{k}: {v}" for k, v in policy.meta_keys.items())}
        if data is not None:  # a post that leaves a field out (a script, an older page) keeps its choice
            data = data.copy()
            for name in self.base_fields:
                data.setdefault(f"fields-{name}", initial[name])
        super().__init__(data, initial=initial, prefix="fields")

    def clean_meta_keys(self) -> dict[str, str]:
        out = {}
        for n, line in enumerate(self.cleaned_data["meta_keys"].splitlines(), start=1):
            if not line.strip():
                continue
            key, sep, value = line.partition(":")
            if not sep or not key.strip() or value.strip() not in ("scan", "keep", "drop"):
                raise forms.ValidationError(f"Line {n}: write key: scan, keep or drop (got {line.strip()!r}).")
            out[key.strip()] = value.strip()
        return out

    def clean_role_labels(self) -> list[str] | None:
        words = [w for w in re.split(r"[\s,]+", self.cleaned_data["role_labels"]) if w]
        return words or None

    def config(self) -> dict:
        """The project's ``release_fields``: what differs from the defaults only, so a project
        that never chose follows the defaults as they improve."""
        chosen = {**self.cleaned_data, "role_labels": self.cleaned_data["role_labels"] or list(DEFAULT_ROLE_LABELS)}
        defaults = FieldPolicy().to_dict()
        return {k: v for k, v in chosen.items()
                if (list(v) if k == "role_labels" else v) != defaults[k]}
