"""Forms of the tagger area: training a version, and how often gold growth retrains."""

from __future__ import annotations

from django import forms


class TrainForm(forms.Form):
    use_gold = forms.BooleanField(required=False, initial=True, help_text="Train on the project's gold set (less the part held out to compare versions).")
    synthetic = forms.IntegerField(min_value=0, max_value=5000, initial=200,
                                   help_text="Add this many generated dialogues (maths traps included).")

    def clean(self):
        data = super().clean()
        if not data.get("use_gold") and not data.get("synthetic"):
            raise forms.ValidationError("Choose the gold set, generated dialogues, or both.")
        return data


class RetrainSettingsForm(forms.Form):
    retrain_every = forms.IntegerField(
        min_value=0, max_value=1_000_000, label="Retrain every",
        help_text="New gold messages between automatic retrains (0: only when asked).")
