"""The running half of the evidence engine: what turns checks into committed results.

The judging half (claims, replicate units, rules, the sequential plan, the statistics)
is ``reprolab.core.claims``, ``reprolab.core.stats`` and ``reprolab.core.sequential``:
the stages run it, so it sits below the stages with the rest of ``core``. This package
runs and publishes: ``rounds`` (what a round decides), ``paper`` (``python -m reprolab
paper``: the rounds in a scratch copy), ``probe`` (``python -m reprolab probe``),
``confirm`` (registered confirmatory runs),
``reread`` (committed results under the current analysis), ``compare`` (two results
folders), ``trail`` (every earlier verdict of a central claim) and ``scoreboard``.
"""
