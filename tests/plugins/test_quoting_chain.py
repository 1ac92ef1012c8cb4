"""QuotingChain, layer by layer and executor by executor: the exact encoded text, what the real
consumer of each layer (bash, shlex's split as docker-py does it, string.Template) makes of it,
and the refusals. Fast (no dryrun), so that mutation testing (scripts/mutation.sh quoting) can
run it for every mutant; the end-to-end paths are in test_script.py and test_quoting_properties.py."""

from __future__ import annotations

import shlex
import string
import subprocess

import nemo_run as run
import pytest

from bridge_plugins.plugins.quoting import LAYERS, QuotingChain

HOSTILE = "a b'c\"d\\e$f`g`h!"
"""Every character a layer must treat: space, both quotes, backslash, dollar, backtick, bang."""


def bash_word(text: str) -> str:
    """What the real bash makes of ``text`` written as one argument of a command line."""
    return subprocess.run(["bash", "-c", f"printf %s {text}"], capture_output=True, text=True, check=True).stdout


def encode(layer: str, text: str) -> str:
    return LAYERS[layer][0](text)


def decode(layer: str, text: str) -> str:
    return LAYERS[layer][1](text)


def test_shell_layer_is_one_bash_word():
    assert encode("shell", HOSTILE) == "'a b'\"'\"'c\"d\\e$f`g`h!'"
    assert bash_word(encode("shell", HOSTILE)) == HOSTILE
    assert decode("shell", encode("shell", HOSTILE)) == HOSTILE
    with pytest.raises(ValueError, match="^not one shell word$"):
        decode("shell", "a b")
    with pytest.raises(ValueError, match="not one shell word"):
        decode("shell", "''''''" + " x")


def test_single_quoted_layer_survives_inside_single_quotes():
    assert encode("single_quoted", "it's") == "it'\\''s"
    assert bash_word("'" + encode("single_quoted", HOSTILE) + "'") == HOSTILE
    assert decode("single_quoted", "it'\\''s") == "it's"


def test_double_quoted_layer_is_read_back_by_a_posix_split():
    assert encode("double_quoted", 'a\\b"c') == 'a\\\\b\\"c'
    assert shlex.split('"' + encode("double_quoted", HOSTILE) + '"') == [HOSTILE]  # docker-py's split
    assert decode("double_quoted", 'a\\\\b\\"c') == 'a\\b"c'
    with pytest.raises(ValueError, match="^unescaped backslash$"):
        decode("double_quoted", "a\\b")
    with pytest.raises(ValueError, match="^unescaped backslash$"):
        decode("double_quoted", "a\\Xb")  # only a backslash or a double quote may follow one
    with pytest.raises(ValueError, match="^unescaped double quote$"):
        decode("double_quoted", 'a"b')
    assert decode("double_quoted", "end\\") == "end"  # a lone trailing backslash: nothing follows it


def test_bash_double_quoted_layer_escapes_exactly_backslash_quote_dollar_and_backtick():
    assert encode("bash_double_quoted", "plain/path.x") == "plain/path.x"  # shell-safe: left as is
    assert encode("bash_double_quoted", "a b") == '"a b"'
    assert encode("bash_double_quoted", "X Y!") == '"X Y!"'  # nothing else is escaped
    assert encode("bash_double_quoted", HOSTILE) == '"a b\'c\\"d\\\\e\\$f\\`g\\`h!"'
    assert bash_word(encode("bash_double_quoted", 'x `echo y` $HOME \\ "')) == 'x `echo y` $HOME \\ "'
    assert decode("bash_double_quoted", "plain") == "plain"
    assert decode("bash_double_quoted", '"a \\$b\\`c\\"d\\\\"') == 'a $b`c"d\\'
    for bad in ("a b", '"a b', 'a b"', '"'):
        with pytest.raises(ValueError, match="^not double-quoted$"):
            decode("bash_double_quoted", bad)
    assert decode("bash_double_quoted", '"a b\\"') == "a b"  # a lone trailing backslash: nothing follows it


def test_macros_layer_survives_template_substitution():
    assert encode("macros", "$x ${img_root} $$") == "$$x $${img_root} $$$$"
    assert string.Template(encode("macros", "$x ${img_root} $$")).substitute(img_root="/img") == "$x ${img_root} $$"
    assert decode("macros", "$$x $$$$") == "$x $$"


def test_no_single_quote_layer_refuses_a_single_quote_naming_the_arg():
    assert encode("no_single_quote", 'a "b" $c') == 'a "b" $c'
    assert decode("no_single_quote", "abc") == "abc"
    with pytest.raises(ValueError, match=r"script arg \"it's\" contains a single quote"):
        encode("no_single_quote", "it's")
    with pytest.raises(ValueError, match="contains a single quote"):
        decode("no_single_quote", "it's")


def test_a_chain_applies_its_layers_innermost_first_and_decodes_in_reverse():
    chain = QuotingChain(("shell", "macros"))
    assert chain.encode("a $b") == "'a $$b'"  # shell first, then macros: not "'a $b'" nor "a $$b" quoted later
    assert chain.decode("'a $$b'") == "a $b"
    twice = QuotingChain(("bash_double_quoted", "bash_double_quoted"))
    assert twice.encode("a $b") == '"\\"a \\\\\\$b\\""'
    once = QuotingChain(("bash_double_quoted",))
    assert bash_word(twice.encode("a $b")) == once.encode("a $b")  # each bash level removes one
    assert bash_word(once.encode("a $b")) == "a $b"
    assert twice.decode(twice.encode("a $b")) == "a $b"
    assert QuotingChain().encode(HOSTILE) == HOSTILE and QuotingChain().decode(HOSTILE) == HOSTILE


def test_decode_or_none():
    assert QuotingChain(("shell",)).decode_or_none("'a b'") == "a b"
    assert QuotingChain(("shell",)).decode_or_none("a b") is None


def _slurm(**kw):
    return run.SlurmExecutor(account="acct", partition="part", **kw)


def _lepton():
    return run.LeptonExecutor(container_image="img", nemo_run_dir="/nemo_run")


GPU_METRICS = run.Torchrun(nsys_profile=True, nsys_gpu_metrics=True)


@pytest.mark.parametrize(
    "executor,launcher,script_arg,layers",
    [
        (run.LocalExecutor(), None, True, ("macros",)),
        (run.LocalExecutor(), run.Torchrun(), True, ("macros",)),
        (run.LocalExecutor(), run.Torchrun(), False, ("macros",)),
        (run.DockerExecutor(container_image="img"), None, True, ("shell", "double_quoted")),
        (run.DockerExecutor(container_image="img"), run.Torchrun(), True, ("no_single_quote", "double_quoted")),
        (run.DockerExecutor(container_image="img"), run.Torchrun(), False, ("shell", "double_quoted")),
        (_slurm(), None, True, ("shell", "macros")),
        (_slurm(), run.Torchrun(), True, ("macros",)),
        (_slurm(), run.Torchrun(), False, ("shell", "macros")),
        (_slurm(), run.FaultTolerance(), True, ("macros",)),
        (_slurm(), GPU_METRICS, True, ("no_single_quote", "bash_double_quoted", "bash_double_quoted", "macros")),
        (_slurm(), GPU_METRICS, False, ("shell", "single_quoted", "macros")),
        (_slurm(), run.Torchrun(nsys_profile=True), True, ("macros",)),  # nsys without GPU metrics: no bash -c
        (_slurm(), run.Torchrun(nsys_gpu_metrics=True), True, ("macros",)),  # metrics without nsys: no bash -c
        (_lepton(), None, True, ("shell",)),  # no macros on Lepton
        (_lepton(), run.Torchrun(), True, ()),
        (_lepton(), GPU_METRICS, True, ()),  # NeMo Run honours nsys_gpu_metrics only on Slurm
    ],
)
def test_each_executor_gets_its_chain(executor, launcher, script_arg, layers):
    assert QuotingChain.for_executor(executor, launcher, script_arg=script_arg) == QuotingChain(layers)


def test_an_executor_without_traits_is_refused_naming_who_asks():
    from nemo_run.core.execution.base import Executor

    with pytest.raises(TypeError, match="^bridge_plugins: Executor is not supported"):
        QuotingChain.for_executor(Executor(), None, script_arg=True)
    with pytest.raises(TypeError, match="^NsysPlugin: Executor is not supported"):
        QuotingChain.for_executor(Executor(), None, script_arg=True, owner="NsysPlugin")
