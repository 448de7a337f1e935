"""Writes: every workflow that changes data lives here as ``<entity>_<action>`` functions."""
