"""How many Slurm tests (marker ``slurm``) pytest would run with the given arguments.

    .venv/bin/python scripts/slurm/tests_selected.py [pytest args...]

scripts/test.sh asks this before bringing the Slurm cluster up, so that ``scripts/test.sh -k
controller`` starts no daemons. It collects with exactly the user's arguments (their ``-k``,
``-m``, paths) and counts the selected items that carry the marker, after pytest's own
deselection. The last line of output is ``slurm tests selected: N``; if collection fails it is
``slurm tests selected: unknown`` (the caller then brings Slurm up anyway: the real run reports
the collection error, and no Slurm test is ever run without a cluster).
"""

import sys

import pytest


class _CountSlurm:
    count = None

    def pytest_collection_finish(self, session):
        self.count = sum(1 for item in session.items if item.get_closest_marker("slurm"))


def main(argv):
    counter = _CountSlurm()
    rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *argv], plugins=[counter])
    ok = counter.count is not None and rc in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    print(f"slurm tests selected: {counter.count if ok else 'unknown'}")


if __name__ == "__main__":
    main(sys.argv[1:])
