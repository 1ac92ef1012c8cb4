"""``bridge-plugins-nsys profile OPTIONS... COMMAND...``: run ``nsys`` with what the nsys here accepts.

NsysPlugin makes this the launch command's program in place of ``nsys``: at job start it asks
that nsys (``--version``, ``profile --help``), plans with runtime/nsys_options.py, says what it
changed in one line each, then ``exec``s nsys (same pid). Standard library only. Behaviour and the
``BRIDGE_PLUGINS_NSYS_GPU`` override: docs/plugins.md "nsys".
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys

from bridge_plugins.jobdir.names import NSYS_WINDOW_RANGE
from bridge_plugins.runtime.nsys_options import NsysHelp, OptionsError, parse_help, plan, split_command

PREFIX = "[bridge_plugins] nsys"
EXIT_NO_NSYS = 127
EXIT_REFUSED = 2


def has_gpu(env: dict[str, str]) -> bool:
    """Whether CUDA can see a GPU here (no CUDA, no cudaProfilerStart: the capture range would never open)."""
    forced = env.get("BRIDGE_PLUGINS_NSYS_GPU")
    if forced in ("0", "1"):
        return forced == "1"
    if env.get("CUDA_VISIBLE_DEVICES") in ("", "-1"):
        return False
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def probe(nsys: str) -> NsysHelp:
    """What this nsys binary knows, from its own help text."""
    version = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=120, check=False)
    text = (version.stdout or version.stderr).strip().splitlines()
    label = text[0].replace("NVIDIA Nsight Systems version ", "") if text else "(unknown version)"
    helped = subprocess.run([nsys, "profile", "--help"], capture_output=True, text=True, timeout=120, check=False)
    return parse_help(helped.stdout + helped.stderr, label)


def fail(message: str, code: int) -> None:
    print(f"{PREFIX}: error on {socket.gethostname()}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    nsys = shutil.which("nsys")
    if nsys is None:
        fail(
            "there is no 'nsys' binary on PATH, so the job cannot run under Nsight Systems; install it "
            "(scripts/install_nsys.sh on Debian) or put it on the job's PATH",
            EXIT_NO_NSYS,
        )
        return
    try:
        help_ = probe(nsys)
        options, command = split_command(args, help_)
        chosen = plan(options, help_, gpu=has_gpu(dict(os.environ)))
    except (OptionsError, OSError, subprocess.SubprocessError) as e:
        fail(str(e), EXIT_REFUSED)
        return
    if chosen.dropped:
        names = " ".join(t for o in chosen.dropped for t in o.tokens)
        print(
            f"{PREFIX}: warning: nsys {help_.version} ({nsys}) does not know {names}: left out "
            f"(a newer nsys knows it); profiling goes on",
            file=sys.stderr,
            flush=True,
        )
    if chosen.cpu_capture:
        print(
            f"{PREFIX}: no GPU on {socket.gethostname()}: capturing the window's NVTX range instead of "
            f"cudaProfilerApi (--capture-range=nvtx --nvtx-capture={NSYS_WINDOW_RANGE})",
            file=sys.stderr,
            flush=True,
        )
    os.environ.update(chosen.env)
    os.execv(nsys, [nsys, *chosen.argv(command)])


if __name__ == "__main__":
    main()
