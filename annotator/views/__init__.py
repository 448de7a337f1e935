"""Views, one module per screen area: parse with a form, check access, call a service, render."""
