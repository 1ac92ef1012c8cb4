"""The real Megatron Bridge 0.6.2 files (fetched by scripts/install_mb.sh into .mb/), loaded on a CPU box.

``import megatron.bridge`` cannot work here (megatron.core needs triton; MB's models need
transformers), so only the files the comparison needs are loaded, with these stubs, each the
smallest that lets a real file load:

* **Package shells**: ``megatron``, ``megatron.bridge``, ``megatron.bridge.recipes``,
  ``megatron.bridge.training``, ``megatron.bridge.training.utils``, ``megatron.bridge.utils``,
  ``megatron.training``, ``megatron.training.config`` are empty modules whose ``__path__`` is the
  unpacked directory: their real ``__init__.py`` files import megatron.core; the submodules below
  load from MB's own files.
* **``megatron.bridge.utils.activation_map``**: ``callable_to_str``/``str_to_callable``, which
  omegaconf_utils imports; the real module imports megatron.core.activations (-> megatron.core).
  They are used only for config fields that hold a function (``activation_func``); the configs
  here have none, so the stand-ins raise if they are ever called.
* **``megatron.bridge.training.config``**: holds only ``ProfilingConfig`` and
  ``FaultToleranceConfig``, their class source lifted verbatim from MB's config.py (which imports
  all of megatron.core), on top of megatron-core's real ``common_config.ProfilingConfig``.
* **``ConfigContainerStandIn``**: MB's ConfigContainer reduced to the sections these overrides
  touch, declared as MB declares them: ``profiling`` (a ProfilingConfig by default), ``ft``
  (Optional, None by default; the parser is given a recipe that sets it, as FT recipes do) and a
  ``train`` section with ``train_iters`` (MB's TrainingConfig field of that name), since the real
  one builds models, optimizers and datasets.

Real, unchanged: ``run_plugins.py`` (the plugins, ``*ScriptArgs``, ``_default_*_converter``),
``import_utils.py``, megatron-core's ``common_config.py`` and ``omegaconf_utils.py`` (the override
parser MB's training scripts run on their argv; in a process with .mb/site first on sys.path, so
it runs with the hydra-core/omegaconf that MB 0.6.2 installs). Stdlib only at import time.
"""

import ast
import dataclasses
import importlib
import sys
import types
import typing
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
MB_DIR = ROOT / ".mb"
SRC = MB_DIR / "src"
SITE = MB_DIR / "site"
READY = MB_DIR / "READY-megatron-bridge-0.6.2"
SHELLS = [
    "megatron",
    "megatron.bridge",
    "megatron.bridge.recipes",
    "megatron.bridge.training",
    "megatron.bridge.training.utils",
    "megatron.bridge.utils",
    "megatron.training",
    "megatron.training.config",
]
LIFTED = ("ProfilingConfig", "FaultToleranceConfig")


def problem() -> str | None:
    """None when scripts/install_mb.sh has completed, else what is missing (with its recorded failure)."""
    if READY.exists():
        return None
    failed = MB_DIR / "FAILED"
    why = failed.read_text().strip() if failed.exists() else "scripts/install_mb.sh has not been run"
    return f"Megatron Bridge 0.6.2 is not in {MB_DIR} ({why}); run: bash scripts/install_mb.sh"


def _shell(name: str) -> types.ModuleType:
    mod = types.ModuleType(name, "stand-in package shell (see tests/plugins/mb_package.py)")
    mod.__path__ = [str(SRC.joinpath(*name.split(".")))]
    sys.modules[name] = mod
    if "." in name:
        parent, _, child = name.rpartition(".")
        setattr(sys.modules[parent], child, mod)
    return mod


def _not_reached(*args, **kwargs):
    raise AssertionError("activation_map stand-in called: a config here holds a function (see mb_package.py)")


def _lift_config_classes() -> types.ModuleType:
    """``megatron.bridge.training.config`` with MB's two classes, their source taken from config.py."""
    base = importlib.import_module("megatron.training.config.common_config")
    mod = types.ModuleType("megatron.bridge.training.config", "ProfilingConfig and FaultToleranceConfig, lifted")
    sys.modules[mod.__name__] = mod
    mod.__dict__.update(
        dataclass=dataclasses.dataclass,
        field=dataclasses.field,
        Optional=typing.Optional,
        Literal=typing.Literal,
        MTrainProfilingConfig=base.ProfilingConfig,
    )
    text = (SRC / "megatron/bridge/training/config.py").read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name in LIFTED:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            source = "\n".join(text.splitlines()[start - 1 : node.end_lineno])
            exec(compile(source, str(SRC / "megatron/bridge/training/config.py"), "exec"), mod.__dict__)

    @dataclasses.dataclass
    class TrainStandIn:
        train_iters: int | None = None

    @dataclasses.dataclass
    class ConfigContainerStandIn:  # these two sections declared as in MB's ConfigContainer
        train: TrainStandIn = dataclasses.field(default_factory=TrainStandIn)
        profiling: mod.ProfilingConfig = dataclasses.field(default_factory=mod.ProfilingConfig)
        ft: Optional[mod.FaultToleranceConfig] = None  # noqa: UP045 (declared as in MB's ConfigContainer)

    for cls in (TrainStandIn, ConfigContainerStandIn):
        cls.__module__, cls.__qualname__ = mod.__name__, cls.__name__
        setattr(mod, cls.__name__, cls)
    return mod


def load(parser: bool = False) -> types.SimpleNamespace:
    """MB's run_plugins and config classes; with ``parser``, its override parser too (needs .mb/site)."""
    if "megatron" not in sys.modules:
        for name in SHELLS:
            _shell(name)
        stub = types.ModuleType("megatron.bridge.utils.activation_map", "stand-in (see tests/plugins/mb_package.py)")
        stub.callable_to_str = stub.str_to_callable = _not_reached
        sys.modules[stub.__name__] = stub
        _lift_config_classes()
    config = sys.modules["megatron.bridge.training.config"]
    ns = types.SimpleNamespace(
        ProfilingConfig=config.ProfilingConfig,
        FaultToleranceConfig=config.FaultToleranceConfig,
        Container=config.ConfigContainerStandIn,
    )
    if parser:
        ns.omegaconf_utils = importlib.import_module("megatron.bridge.training.utils.omegaconf_utils")
    else:
        ns.run_plugins = importlib.import_module("megatron.bridge.recipes.run_plugins")
    return ns
