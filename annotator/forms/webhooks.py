"""The webhook registration form: a URL and the events it listens to (the service checks where it
points)."""

from __future__ import annotations

from django import forms

from annotator.models import WebhookEvent
from annotator.outbound import MAX_URL_LENGTH


class WebhookForm(forms.Form):
    url = forms.CharField(
        label="URL", max_length=MAX_URL_LENGTH,
        widget=forms.URLInput(attrs={"placeholder": "https://hooks.example.org/blindspot", "class": "mono"}),
        help_text="Receives a signed JSON POST for each event. Public addresses only, unless the deployment "
                  "allows a network (BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS).")
    events = forms.MultipleChoiceField(choices=WebhookEvent.choices, widget=forms.CheckboxSelectMultiple,
                                       error_messages={"required": "Choose at least one event."})
