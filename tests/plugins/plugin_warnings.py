"""The plugin warnings a call emits, in order (other warnings left out)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from bridge_plugins.plugins import ProfilingPluginWarning


def plugin_warnings(call: Callable[[], object]) -> list[str]:
    """Run ``call`` and return the messages of the ProfilingPluginWarnings it emitted, in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, ProfilingPluginWarning)]
