"""The running half of the evidence engine: what turns checks into committed results.

The judging half (claims, replicate units, rules, the sequential plan, the statistics)
is :mod:`reprolab.evidence.judging`: the stages run it, so it sits below them. This
package runs the stages and publishes: ``rounds`` (what a round decides), ``paper`` (``python -m reprolab
paper``: the rounds in a scratch copy), ``probe`` (``python -m reprolab probe``),
``confirm`` (registered confirmatory runs),
``reread`` (committed results under the current analysis), ``compare`` (two results
folders), ``trail`` (every earlier verdict of a central claim) and ``scoreboard``.
"""
