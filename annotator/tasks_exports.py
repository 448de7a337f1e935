"""Celery tasks of this area: ids in, one service call."""
