"""Shared machinery: I/O, statistics, claims, tracking, training and quantization helpers."""
