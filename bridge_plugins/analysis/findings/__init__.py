"""Findings: what is wrong with a run, ranked by the time at stake per step, with evidence and
what to try. One module per kind (the kinds are documented in docs/diagnose.md); ``rank_findings``
in ``run.py`` applies them all to a summary.
"""
