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
