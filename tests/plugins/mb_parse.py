"""Feed argvs to Megatron Bridge 0.6.2's own override parser, as its training scripts do.

Run as a separate process (tests/plugins/test_mb_real_package.py), with .mb/site first on
sys.path so that MB's parser runs with the hydra-core and omegaconf that MB installs. Reads
``[{"id", "argv", "sections"}]`` as JSON on stdin; for each, builds the ConfigContainer stand-in with
the given sections (MB's ProfilingConfig / FaultToleranceConfig, defaults), splits the argv as MB's
example scripts do (``argparse.parse_known_args``: every arg it does not know is an override), runs
``process_config_with_overrides`` and then ``ProfilingConfig.finalize()`` (MB's validation), and
prints ``{id: {"ok", "error", "profiling", "ft"}}``.
"""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / ".mb" / "site"), str(HERE.parents[2])]

from tests.plugins.mb_package import load  # noqa: E402


def parse_one(mb, argv, sections):
    cfg = mb.Container(
        profiling=mb.ProfilingConfig() if "profiling" in sections else None,
        ft=mb.FaultToleranceConfig() if "ft" in sections else None,
    )
    _, overrides = argparse.ArgumentParser(add_help=False).parse_known_args(argv)
    try:
        mb.omegaconf_utils.process_config_with_overrides(cfg, cli_overrides=overrides)
        if cfg.profiling is not None:
            cfg.profiling.finalize()
    except Exception as e:  # the job would die here: record the first line of MB's message
        return {"ok": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    out = {"ok": True, "error": ""}
    for name in ("profiling", "ft"):
        section = getattr(cfg, name)
        out[name] = dataclasses.asdict(section) if section is not None else None
    return out


def main():
    mb = load(parser=True)
    import hydra
    import omegaconf

    cases = json.load(sys.stdin)
    results = {c["id"]: parse_one(mb, c["argv"], c["sections"]) for c in cases}
    results["_versions"] = {"hydra": hydra.__version__, "omegaconf": omegaconf.__version__}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
