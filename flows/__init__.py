"""Prefect flows: reproduce one method, reproduce all, serve the scheduled deployment."""
