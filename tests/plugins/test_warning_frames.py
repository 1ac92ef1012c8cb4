"""``edits.warn`` names the first line outside bridge_plugins, NeMo Run and fiddle, whatever the
stack between: callers are made here as functions of those packages (code run with their module
name), so the frame walk is checked line by line without a launch."""

from __future__ import annotations

import os
import sys
import warnings

from bridge_plugins.plugins import ProfilingPluginWarning, edits

_CALLER = """
def library_call(next_call, *args):
    return next_call(*args)
"""
_WARNER = """
def warn_here(warn, message):
    warn(message)
"""


def _function(source: str, name: str, module: str | None, filename: str):
    """``name`` from ``source`` compiled as ``filename``, run as module ``module`` (None: no
    ``__name__`` at all, as code run by ``exec`` with bare globals)."""
    namespace: dict = {} if module is None else {"__name__": module}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def _warn_as_it_runs():
    """``edits.warn`` called without a wrapper frame in between. Under mutmut (scripts/mutation.sh)
    the function is wrapped in a trampoline whose frame, in mutmut's own module, is the first caller
    ``warn`` sees; this is the variant that trampoline would call, so the walk checked is the same."""
    with warnings.catch_warnings(record=True):  # once through the wrapper: mutmut then knows the test runs warn
        warnings.simplefilter("always")
        edits.warn("W")
    variants = getattr(edits, "mutants_x_warn__mutmut", None)
    if variants is None:
        return edits.warn
    module, _, name = os.environ.get("MUTANT_UNDER_TEST", "").rpartition(".")
    return variants.get(name, variants["_mutmut_orig"]) if module == edits.__name__ else variants["_mutmut_orig"]


def _caught(call) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return list(caught)


def test_the_warning_names_the_first_line_outside_the_libraries():
    warner = _function(_WARNER, "warn_here", "bridge_plugins.plugins.fake", "<bridge_plugins>")
    caller = _function(_CALLER, "library_call", "nemo_run.fake", "<nemo_run>")
    fiddle = _function(_CALLER, "library_call", "fiddle.fake", "<fiddle>")
    line = sys._getframe().f_lineno + 1
    (w,) = _caught(lambda: fiddle(caller, warner, _warn_as_it_runs(), "M"))
    assert (w.filename, w.lineno, str(w.message), w.category) == (__file__, line, "M", ProfilingPluginWarning)


def test_a_frame_outside_the_libraries_is_named_at_once():
    warner = _function(_WARNER, "warn_here", "user_code", "<user>")
    (w,) = _caught(lambda: warner(_warn_as_it_runs(), "M"))
    assert (w.filename, w.lineno) == ("<user>", 3)


def test_a_frame_without_a_module_name_is_named_at_once():
    """Code run by ``exec`` with bare globals has no ``__name__``: not a library frame."""
    warner = _function(_WARNER, "warn_here", None, "<exec>")
    caller = _function(_CALLER, "library_call", "bridge_plugins.fake", "<bridge_plugins>")
    (w,) = _caught(lambda: caller(warner, _warn_as_it_runs(), "M"))
    assert (w.filename, w.lineno) == ("<exec>", 3)


def test_the_warning_category_is_passed_on():
    (w,) = _caught(lambda: _warn_as_it_runs()("N", edits.NsysNotFoundWarning))
    assert (str(w.message), w.category, w.filename) == ("N", edits.NsysNotFoundWarning, __file__)
