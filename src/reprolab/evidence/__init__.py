"""The evidence engine: how a paper's claim becomes a verdict and a committed result.

One package, two halves and the record between them, each a layer of its own so that no
import runs up:

- ``judging`` (claims and their checks, replicate units and rules, the claims.json
  entries and the verdicts' vocabulary, the sequential plan, the statistics): the
  methods, the stages and ``core`` run it, so it imports nothing else of the project;
- ``ledger`` (the preregistration record: what each claim *is*, registered before its
  result counts): the report stage reads it;
- ``running`` (rounds, paper, probe, confirm, reread, compare, trail, scoreboard): it runs
  the stages and publishes their results, so it sits above them.

This module imports nothing: ``import reprolab.evidence.judging`` loads only what
judging needs.
"""
