"""reprolab: reproduce ICML 2025 methods at small scale and check their claims."""

__version__ = "0.1.0"
