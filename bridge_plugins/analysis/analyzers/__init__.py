"""One module per question about a trace, each a function of the collector's data and a typed result.

``analyze`` (in ``all.py``) runs them all over one trace; the findings (``diagnose``) read their results.
"""
