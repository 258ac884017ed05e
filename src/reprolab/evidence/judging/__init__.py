"""The judging half of the evidence engine: ``claims`` (claims, checks, verdicts and the
size reading), ``entries`` (the typed claims.json model and the verdicts' vocabulary),
``stats`` (intervals and tests) and ``sequential`` (the replication plan). It imports
nothing else of the project."""
