"""``python -m recipes --ranks``: an empty value (an unset shell variable) or an empty item is refused,
never read as "every rank", and every ranks error is worded one way (issue 33, point 7)."""

from __future__ import annotations

import pytest

from recipes import arguments

ONE_WAY = "give distinct global ranks >= 0, comma-separated (e.g. 0,1), or 'all'"


def error_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        args = arguments.build_parser().parse_args(list(argv))
        arguments.check_args(args, arguments.build_parser())
    assert stop.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("value", ["", " ", "0,,1", "0,", ",1", "[0,,1]"])
def test_an_empty_ranks_value_or_item_is_one_line_not_every_rank(capsys, value):
    line = error_of(capsys, "--ranks", value)
    assert line == f"python -m recipes: error: --ranks {value!r}: an empty rank; {ONE_WAY}", line


@pytest.mark.parametrize(
    "argv,why",
    [
        (["--ranks", "x"], "--ranks 'x': not a number: 'x'"),
        (["--ranks", "-1"], "--ranks '-1': a negative rank, -1"),
        (["--ranks", "0,0"], "--ranks '0,0': rank 0 twice"),
        (["--ranks", "0,5"], "--ranks '0,5': no rank 5 with --nproc 2 (ranks 0-1; raise --nproc for more)"),
    ],
)
def test_every_ranks_error_is_worded_one_way(capsys, argv, why):
    line = error_of(capsys, *argv)
    assert why in line and line.endswith(ONE_WAY), line


@pytest.mark.parametrize("value,ranks", [("all", []), ("ALL", []), ("0,1", [0, 1]), ("[0, 1]", [0, 1]), ("1", [1])])
def test_good_ranks_values(value, ranks):
    assert arguments.build_parser().parse_args(["--ranks", value]).ranks == ranks
