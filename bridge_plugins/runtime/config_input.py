"""What ``ProfilingController.from_config`` accepts, turned into a ProfilingConfig (or None).

Accepted: None (an inert controller); our ProfilingConfig; a config container with a
``.profiling`` attribute (ours, or Megatron Bridge's ConfigContainer) and optional ``.ft``; any
object with ProfilingConfig's field names (Megatron Bridge's ProfilingConfig); a mapping of
ProfilingConfig fields, or ``{"profiling": {...}}``. Anything else is a TypeError: a controller
that silently profiles nothing is the worst outcome for the user.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bridge_plugins.config.conflicts import NSYS_UNDER_FT, nsys_allowed
from bridge_plugins.config.profiling import ProfilingConfig, profiling_fields

log = logging.getLogger("bridge_plugins")


def profiling_section(section: Any) -> ProfilingConfig | None:
    """A ProfilingConfig from ours, a mapping of its fields, or an object with its field names
    (Megatron Bridge's, Megatron-LM's): :meth:`ProfilingConfig.from_object` names what it cannot carry."""
    if section is None or isinstance(section, ProfilingConfig):
        return section
    return ProfilingConfig.from_object(section)


def config_from(cfg: Any) -> ProfilingConfig | None:
    """The profiling config ``from_config(cfg)`` runs with (see the module docstring)."""
    if cfg is None or isinstance(cfg, ProfilingConfig):
        return cfg
    if isinstance(cfg, Mapping):
        if "profiling" in cfg:
            return profiling_section(cfg["profiling"])
        return profiling_section(cfg)
    if not hasattr(cfg, "profiling"):
        if any(hasattr(cfg, name) for name in profiling_fields()):
            return profiling_section(cfg)
        raise TypeError(
            f"ProfilingController.from_config got {type(cfg).__name__}: pass a config container with a .profiling "
            f"section, a ProfilingConfig, a mapping of its fields, or None"
        )
    prof = profiling_section(cfg.profiling)
    ft = getattr(cfg, "ft", None)
    under_ft = bool(getattr(ft, "enable_ft_package", False))
    if prof is not None and prof.use_nsys_profiler and not nsys_allowed(fault_tolerance=under_ft):
        log.warning(
            "fault tolerance is enabled (ft.enable_ft_package=True): nsys profiling is disabled for this job: %s",
            NSYS_UNDER_FT,
        )
        prof = replace(prof, use_nsys_profiler=False)
    return prof
