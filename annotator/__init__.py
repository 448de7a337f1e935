"""Blindspot's Django project and app."""

from annotator.celery import app as celery_app

__all__ = ("celery_app",)
