from __future__ import annotations

import json

from django import forms

from annotator.services.runs import PRESETS


class RunForm(forms.Form):
    preset = forms.ChoiceField(choices=[(k, k) for k in PRESETS], initial="rules")
    config = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
        help_text='Optional JSON merged over the preset, e.g. {"score_threshold": 0.5}.',
    )

    def clean_config(self):
        raw = (self.cleaned_data.get("config") or "").strip()
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg}.") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("The config must be a JSON object.")
        return value

    def detector_and_config(self) -> tuple[str, dict]:
        preset = self.cleaned_data["preset"]
        return preset.split()[0], {**PRESETS[preset], **self.cleaned_data["config"]}


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
