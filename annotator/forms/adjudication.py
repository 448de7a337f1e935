"""Forms of adjudication: every request, GET filters included, is parsed here."""

from __future__ import annotations

from django import forms

from annotator.models import AdjudicationItem


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
    reply = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
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
    flag = forms.ChoiceField(choices=[("", "All"), ("notes", "Has notes"), ("uncertain", "Uncertain")],
                             required=False)
    q = forms.CharField(required=False, max_length=200)
    # a page's cursor (annotator.selectors.ordered_keyset_page): the queue order's values
    # "risk-weight-dialogue-position-id" of the row it follows or precedes, read strictly there
    after = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    before = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    page = forms.IntegerField(min_value=1, required=False)  # before cursors: a bookmark's page 1 still opens
