"""Forms of the annotation workspace: every POST and GET filter is parsed by one of these."""

from __future__ import annotations

from django import forms
from django.db.models import OuterRef, Subquery

from annotator.models import Assignment, DetectorRun, MessageUncertainty
from pipeline import assignment as algo


class ActionForm(forms.Form):
    """What every workspace action carries: the version the page showed and active time since."""

    version = forms.IntegerField(min_value=0)
    active = forms.FloatField(required=False, min_value=0)


class SpanAddForm(ActionForm):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)
    label = forms.CharField(max_length=64)
    exact = forms.BooleanField(required=False)


class SpanForm(ActionForm):
    annotation = forms.IntegerField(min_value=1)


class SpanRelabelForm(SpanForm):
    label = forms.CharField(max_length=64)


class SuggestionForm(ActionForm):
    prediction = forms.IntegerField(min_value=1)


class SuggestionRelabelForm(SuggestionForm):
    label = forms.CharField(max_length=64)


class NoPiiForm(ActionForm):
    value = forms.BooleanField(required=False)


class FlagForm(ActionForm):
    uncertain = forms.BooleanField(required=False)
    comment = forms.CharField(required=False, max_length=4000)


class TimeForm(forms.Form):
    active = forms.FloatField(min_value=0)


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "All"), *Assignment.Status.choices])
    q = forms.CharField(required=False, max_length=200, label="Search",
                        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Dialogue id or text"}))
    # a page's cursor (annotator.selectors.keyset_page): "<order>-<id>" of the row it follows or precedes
    after = forms.RegexField(required=False, regex=r"^\d+-\d+$", widget=forms.HiddenInput)
    before = forms.RegexField(required=False, regex=r"^\d+-\d+$", widget=forms.HiddenInput)
    page = forms.IntegerField(min_value=1, required=False)  # before cursors: a bookmark's page 1 still opens


class PlanForm(forms.Form):
    strategy = forms.ChoiceField(choices=[
        (algo.FLAGGED, "Every message a chosen run flagged"),
        (algo.FLAGGED_AUDIT, "Flagged messages plus a random audit sample of unflagged ones"),
        (algo.DIALOGUES, "A random sample of whole dialogues"),
        (algo.UNCERTAIN, "Where the model is least sure (a tagger run), plus an audit sample of unflagged ones"),
    ])
    runs = forms.ModelMultipleChoiceField(queryset=DetectorRun.objects.none(), required=False,
                                          widget=forms.CheckboxSelectMultiple)
    audit_rate = forms.FloatField(required=False, min_value=0, max_value=1, initial=0.05,
                                  help_text="Share of unflagged messages to audit (0.05 = 5%).")
    n_dialogues = forms.IntegerField(required=False, min_value=1, help_text="Dialogues to sample.")
    budget = forms.IntegerField(required=False, min_value=1, label="Messages (least sure)",
                                help_text="How many messages the least-sure plan takes, audit included.")
    audit_share = forms.FloatField(required=False, min_value=0, max_value=0.99, initial=0.2,
                                   help_text="Share of those messages drawn at random from unflagged ones "
                                             "(0.2 = a fifth), so misses are still found.")
    annotators = forms.ModelMultipleChoiceField(queryset=None, widget=forms.CheckboxSelectMultiple)
    k = forms.IntegerField(min_value=1, max_value=20, label="Annotators per item (k)")
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**62,
                              help_text="Leave empty for a fresh random seed (it is stored and shown).")
    dry_run = forms.BooleanField(required=False, help_text="Only show what the plan would do.")

    def __init__(self, *args, project, annotators, **kwargs):
        super().__init__(*args, **kwargs)
        # "Scored": the run's smallest margin, read from the index (run, margin). An EXISTS here let
        # PostgreSQL scan the margins, a million rows for a tagger run at a million messages, to
        # find none for each run that has none.
        least_sure = MessageUncertainty.objects.filter(run=OuterRef("pk")).order_by("margin").values("margin")[:1]
        self.fields["runs"].queryset = DetectorRun.objects.filter(project=project).order_by("-pk").annotate(
            least_margin=Subquery(least_sure))
        self.fields["runs"].label_from_instance = (
            lambda r: f"{r.label} · {r.get_status_display()}"
            + (" · scored (least sure)" if r.least_margin is not None else ""))
        self.fields["annotators"].queryset = annotators
        self.fields["annotators"].label_from_instance = lambda u: u.username
        self.fields["k"].initial = project.overlap_k

    def clean(self):
        data = super().clean()
        strategy = data.get("strategy")
        if strategy in (algo.FLAGGED, algo.FLAGGED_AUDIT) and not data.get("runs"):
            self.add_error("runs", "Choose the runs whose flagged messages to assign.")
        if strategy == algo.FLAGGED_AUDIT and not data.get("audit_rate"):
            self.add_error("audit_rate", "Give an audit rate above 0.")
        if strategy == algo.DIALOGUES and not data.get("n_dialogues"):
            self.add_error("n_dialogues", "Give the number of dialogues to sample.")
        if strategy == algo.UNCERTAIN:
            if not data.get("runs"):
                self.add_error("runs", "Choose the tagger run whose scores to rank by.")
            if not data.get("budget"):
                self.add_error("budget", "Give the number of messages to plan.")
            if data.get("audit_share") is None and "audit_share" not in self.errors:
                self.add_error("audit_share", "Give the audit share (0 for none).")
        return data

    def plan_args(self) -> dict:
        """The keyword arguments of ``plan_create`` / ``plan_start`` (less project and author)."""
        d = self.cleaned_data
        return {"strategy": d["strategy"], "annotators": d["annotators"], "k": d["k"], "seed": d["seed"],
                "runs": d["runs"], "audit_rate": d["audit_rate"] or 0.0, "n_dialogues": d["n_dialogues"] or 0,
                "budget": d["budget"] or 0, "audit_share": d["audit_share"] or 0.0}


class ReassignForm(forms.Form):
    from_user = forms.ModelChoiceField(queryset=None, label="Move unfinished work of")
    to_user = forms.ModelChoiceField(queryset=None, required=False, label="To",
                                     empty_label="Everyone else, balanced")

    def __init__(self, *args, annotators, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from_user"].queryset = annotators
        self.fields["to_user"].queryset = annotators
        for name in ("from_user", "to_user"):
            self.fields[name].label_from_instance = lambda u: u.username

    def clean(self):
        data = super().clean()
        if data.get("from_user") and data.get("from_user") == data.get("to_user"):
            self.add_error("to_user", "Choose somebody else.")
        return data
