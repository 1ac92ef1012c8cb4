"""Recipe factories for the tiny GPT job.

``tiny_gpt_config`` builds a ConfigContainer (no nemo_run needed); ``tiny_gpt_recipe`` wraps it
in a ``run.Partial(pretrain, config=...)`` for NeMo Run, and ``tiny_gpt_script`` in a
``run.Script`` that runs ``python -m recipes.train``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from recipes.config import ConfigContainer


def tiny_gpt_config(**overrides: Any) -> ConfigContainer:
    """The default ConfigContainer with section fields replaced.

    Keys are ``section__field`` or ``section=dict(...)``/``section=<dataclass>``, e.g.
    ``tiny_gpt_config(train__train_iters=30, profiling=ProfilingConfig(use_pytorch_profiler=True))``.
    """
    cfg = ConfigContainer()
    for key, value in overrides.items():
        section, _, name = key.partition("__")
        if not hasattr(cfg, section):
            raise TypeError(
                f"tiny_gpt_config: unknown section {section!r}; sections: {[f.name for f in dataclasses.fields(cfg)]}"
            )
        if not name:
            if isinstance(value, dict):
                value = dataclasses.replace(getattr(cfg, section), **value)
            setattr(cfg, section, value)
            continue
        sub = getattr(cfg, section)
        if name not in {f.name for f in dataclasses.fields(sub)}:
            raise TypeError(f"tiny_gpt_config: {type(sub).__name__} has no field {name!r}")
        setattr(cfg, section, dataclasses.replace(sub, **{name: value}))
    return cfg


def tiny_gpt_recipe(**overrides: Any):
    """A ``run.Partial(pretrain, config=ConfigContainer)`` ready for ``exp.add``."""
    import nemo_run as run

    from recipes.train import pretrain

    return run.Partial(pretrain, config=tiny_gpt_config(**overrides))


def tiny_gpt_script(*args: str, python: str = "python"):
    """A ``run.Script`` that runs ``python -m recipes.train <args>`` (dotted overrides)."""
    import nemo_run as run

    return run.Script(path="recipes.train", m=True, args=list(args), entrypoint=python)
