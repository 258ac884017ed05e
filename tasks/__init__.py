"""Prefect tasks: thin wrappers around reprolab's stage functions."""
