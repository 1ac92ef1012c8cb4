"""Where the job side writes, resolved where the job runs, with one clear error per bad path.

Why here and not in ProfilingConfig: the launch side sees only values; the paths exist on the
job's machine (``/nemo_run/...``, a cluster file system), so whether they are usable is known only
at controller entry. A path that cannot be used (a NUL byte, ``~nosuchuser``, an existing file
where a directory is needed) raises ValueError naming the field, the value and the fix; the
controller turns that into an error line and training goes on.
"""

from __future__ import annotations

import os
from pathlib import Path

from bridge_plugins.config.profiling import DEFAULT_OUTPUT_DIR, OUTPUT_DIR_ENV, ProfilingConfig


def _expand(field: str, value: str) -> Path:
    if "\0" in str(value):
        raise ValueError(f"ProfilingConfig.{field}={value!r} contains a NUL byte; no file system accepts it")
    try:
        return Path(value).expanduser()
    except RuntimeError as e:  # ~nosuchuser: no such home directory
        raise ValueError(f"ProfilingConfig.{field}={value!r}: {e} (no such user's home); give a plain path") from e


def resolve_output_dir(cfg: ProfilingConfig) -> Path:
    """output_dir (when None: $BRIDGE_PLUGINS_OUTPUT_DIR, else ./profiling) as an absolute path; it may
    not exist yet."""
    value = cfg.output_dir or os.environ.get(OUTPUT_DIR_ENV) or DEFAULT_OUTPUT_DIR
    path = _expand("output_dir", value)
    try:
        path = path.resolve()
    except (OSError, RuntimeError) as e:  # a symlink loop
        raise ValueError(f"ProfilingConfig.output_dir={value!r} cannot be used: {e}") from e
    if path.exists() and not path.is_dir():
        raise ValueError(f"ProfilingConfig.output_dir={value!r} is an existing file ({path}); give a directory")
    return path


def resolve_snapshot_path(cfg: ProfilingConfig, output_dir: Path) -> Path:
    """memory_snapshot_path, resolved under output_dir when relative; must name a file."""
    value = cfg.memory_snapshot_path
    path = _expand("memory_snapshot_path", value)
    path = path if path.is_absolute() else output_dir / path
    if os.path.basename(str(value)) in ("", ".", "..") or path.is_dir():  # 'snaps/', '.', '~'
        raise ValueError(
            f"ProfilingConfig.memory_snapshot_path={value!r} names a directory ({path}); give a file inside it, "
            f"e.g. {str(Path(value) / 'memory_snapshot.pickle')!r}"
        )
    return path
