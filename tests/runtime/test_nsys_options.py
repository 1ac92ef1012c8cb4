"""Fitting an nsys command line to the nsys where the job runs (runtime/nsys_options.py), in process.

The help text is nsys 2022.4's layout (a tab, an optional short name, the long name, ``=``; the
include/exclude pair on one line), cut to the options these tests name; each plan is pinned whole.
"""

from __future__ import annotations

import pytest

from bridge_plugins.runtime.nsys_options import NEEDED, Option, OptionsError, Plan, parse_help, plan, split_command

HELP_2022_4 = """\
usage: nsys profile [<args>] [application] [<application args>]

\t-c, --capture-range=
\t   Possible values are none, cudaProfilerApi, nvtx.
\t--capture-range-end=
\t   If --capture-range is used, --cpuctxsw equals the --sample setting.
\t--cpuctxsw=
\t-f, --force-overwrite=
\t--nvtx-domain-[include|exclude]=
\t-p, --nvtx-capture=
\t-o, --output=
\t-s, --sample=
\t-t, --trace=
"""
COMMAND = ["torchrun", "-m", "x", ""]


def help_(text: str = HELP_2022_4, version: str = "2022.4.2"):
    return parse_help(text, version)


def fitted(args: list[str], gpu: bool, text: str = HELP_2022_4) -> tuple[Plan, list[str]]:
    nsys = help_(text)
    options, command = split_command(["profile", *args, *COMMAND], nsys)
    assert command == COMMAND
    chosen = plan(options, nsys, gpu=gpu)
    return chosen, chosen.argv(command)


def test_the_help_gives_long_names_short_names_and_both_of_a_pair():
    nsys = help_()
    assert nsys.version == "2022.4.2"
    assert nsys.long_names == {
        "--capture-range",
        "--capture-range-end",
        "--cpuctxsw",
        "--force-overwrite",
        "--nvtx-domain-include",
        "--nvtx-domain-exclude",
        "--nvtx-capture",
        "--output",
        "--sample",
        "--trace",
    }
    assert nsys.short_names == {
        "-c": "--capture-range",
        "-f": "--force-overwrite",
        "-p": "--nvtx-capture",
        "-o": "--output",
        "-s": "--sample",
        "-t": "--trace",
    }


def test_a_short_name_the_help_does_not_list_falls_back_to_nsys_own_meaning():
    nsys = parse_help("\t--output=\n\t--trace=\n", "old")
    assert nsys.short_names == {}
    assert [nsys.long_name(n) for n in ("-s", "-t", "-o", "-c", "-p", "-x", "--kill")] == [
        "--sample",
        "--trace",
        "--output",
        "--capture-range",
        "--nvtx-capture",
        "-x",
        "--kill",
    ]
    assert nsys.knows("-o") and nsys.knows("--trace") and not nsys.knows("-s") and not nsys.knows("-x")


def test_the_listed_short_name_wins_over_the_fallback():
    nsys = parse_help("\t-o, --trace=\n", "odd")
    assert nsys.long_name("-o") == "--trace" and nsys.knows("-o")


def test_split_keeps_each_option_as_written_and_returns_the_command():
    nsys = help_()
    options, command = split_command(["profile", "-o", "out", "--trace=cuda", "--output", "o2", "python", "-o"], nsys)
    assert options == [
        Option(("-o", "out"), "--output"),
        Option(("--trace=cuda",), "--trace"),
        Option(("--output", "o2"), "--output"),
    ]
    assert command == ["python", "-o"]
    assert [o.value for o in options] == ["out", "cuda", "o2"]
    assert Option(("--kill",), "--kill").value is None and Option(("--a=b=c",), "--a").value == "b=c"


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "expected 'profile OPTIONS... COMMAND...', got []"),
        (["launch", "x"], "expected 'profile OPTIONS... COMMAND...', got ['launch']"),
        (["profile", "--trace=cuda"], "no command to profile after the nsys options"),
        (["profile"], "no command to profile after the nsys options"),
        (
            ["profile", "-o"],
            "nsys 2022.4.2 does not know the option '-o', and without '=' its value cannot be told from "
            "the command: write it as -o=VALUE (then it is dropped here)",
        ),
    ],
)
def test_split_refusals_are_one_exact_line(args, message):
    with pytest.raises(OptionsError) as raised:
        split_command(args, help_())
    assert str(raised.value) == message


def test_with_a_gpu_only_unknown_options_are_dropped():
    chosen, argv = fitted(["-t", "cuda", "-o", "r", "--capture-range=cudaProfilerApi", "--newer=1"], gpu=True)
    assert argv == ["profile", "-t", "cuda", "-o", "r", "--capture-range=cudaProfilerApi", *COMMAND]
    assert chosen.dropped == [Option(("--newer=1",), "--newer")]
    assert not chosen.cpu_capture and chosen.env == {}


def test_without_a_gpu_the_window_nvtx_range_is_the_capture_range():
    args = ["-t", "cuda", "-o", "r", "-c", "cudaProfilerApi", "-p", "user", "--capture-range-end=stop"]
    chosen, argv = fitted(args, gpu=False)
    assert argv == [
        "profile",
        "-t",
        "cuda,nvtx",
        "-o",
        "r",
        "--capture-range-end=stop",
        "--capture-range=nvtx",
        "--nvtx-capture=bridge_plugins.window",
        "--cpuctxsw=none",
        *COMMAND,
    ]
    assert chosen.cpu_capture and chosen.env == {"NSYS_NVTX_PROFILER_REGISTER_ONLY": "0"} and chosen.dropped == []


def test_without_a_gpu_a_trace_with_nvtx_and_the_users_cpuctxsw_are_kept():
    args = ["--trace=nvtx,cuda", "--cpuctxsw=process-tree", "--capture-range=cudaProfilerApi"]
    chosen, argv = fitted(args, gpu=False)
    assert argv == [
        "profile",
        "--trace=nvtx,cuda",
        "--cpuctxsw=process-tree",
        "--capture-range=nvtx",
        "--nvtx-capture=bridge_plugins.window",
        *COMMAND,
    ]


def test_without_a_gpu_an_nsys_without_cpuctxsw_gets_none_and_no_trace_is_added():
    text = HELP_2022_4.replace("\t--cpuctxsw=\n", "")
    chosen, argv = fitted(["--capture-range=cudaProfilerApi"], gpu=False, text=text)
    assert argv == ["profile", "--capture-range=nvtx", "--nvtx-capture=bridge_plugins.window", *COMMAND]


@pytest.mark.parametrize("range_", [None, "nvtx", "none"])
def test_without_a_gpu_a_capture_range_other_than_cuda_profiler_api_is_left_alone(range_):
    args = ["-t", "cuda"] + ([f"--capture-range={range_}"] if range_ else [])
    chosen, argv = fitted(args, gpu=False)
    assert argv == ["profile", *args, *COMMAND] and not chosen.cpu_capture and chosen.env == {}


@pytest.mark.parametrize("needed", NEEDED)
def test_each_option_the_window_needs_is_refused_when_unknown_in_one_line(needed):
    text = "".join(line + "\n" for line in HELP_2022_4.splitlines() if not line.endswith(f"{needed}="))
    with pytest.raises(OptionsError) as raised:
        fitted([f"{needed}=v", "--kill=none"], gpu=True, text=text)
    assert str(raised.value) == (
        f"nsys 2022.4.2 does not know {needed}, which profiling the window needs: use an Nsight Systems "
        f"whose 'nsys profile --help' lists it (2022.4 or newer does)"
    )


def test_a_value_may_hold_an_equals_sign_and_an_option_pair_needs_a_command_after_it():
    options, command = split_command(["profile", "--env-var=A=1", "-o", "r", "python"], help_())
    assert options == [Option(("--env-var=A=1",), "--env-var"), Option(("-o", "r"), "--output")]
    assert command == ["python"]
    with pytest.raises(OptionsError) as raised:
        split_command(["profile", "-o", "r"], help_())
    assert str(raised.value) == "no command to profile after the nsys options"


def test_without_a_gpu_each_option_the_plan_adds_or_changes_carries_its_long_name():
    chosen, _ = fitted(["-t", "cuda", "-c", "cudaProfilerApi", "-o", "r"], gpu=False)
    assert chosen.options == [
        Option(("-t", "cuda,nvtx"), "--trace"),
        Option(("-o", "r"), "--output"),
        Option(("--capture-range=nvtx",), "--capture-range"),
        Option(("--nvtx-capture=bridge_plugins.window",), "--nvtx-capture"),
        Option(("--cpuctxsw=none",), "--cpuctxsw"),
    ]
