"""One module per question about a trace, each a function of the collector's data and a typed result:
the analyses and the summary's version-1 figures (GPU breakdown, op tables, step times, precision).

``analyze`` (in ``all.py``) runs them all over one trace; the findings (``diagnose``) read their results.
"""
