"""``python -m bridge_plugins`` runs the ``bridge-plugins`` command."""

import sys

from bridge_plugins.cli import main

sys.exit(main())
