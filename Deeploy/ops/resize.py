"""Resize."""
