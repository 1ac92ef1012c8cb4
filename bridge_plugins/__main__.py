"""``python -m bridge_plugins`` runs the ``bridge-plugins`` command."""

from bridge_plugins.cli import run_and_exit

run_and_exit()
