"""One folder per paper; see reprolab.contract for what a folder provides."""
