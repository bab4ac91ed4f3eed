"""Theorems about the model, one per module."""
