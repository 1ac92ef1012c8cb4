"""Sphinx configuration of the bridge-plugins docs (built by scripts/docs.sh, checked by tests/docs/)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document this checkout, not an installed copy

project = "bridge-plugins"
author = "bridge-plugins maintainers"
copyright = "bridge-plugins maintainers"

extensions = [
    "myst_parser",  # pages in Markdown, like the README
    "sphinx.ext.autodoc",  # the API reference from the docstrings
    "sphinxarg.ext",  # the CLI reference from the real argparse parsers
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "scale.md"]  # included whole by scale-and-limits.md

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # `[text](page.md#a-heading)` links resolve, and are checked by the build

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_class_signature = "separated"
# Text as typed: Sphinx would print the help's "--json" as "–json" and 'all' as ‘all’, which fail when copied.
smartquotes = False
# Docstrings say ``name`` for code; render it as code, not as a reference that nitpicky mode chases.
default_role = "code"

html_theme = "furo"
html_title = "bridge-plugins"
html_static_path: list[str] = []
html_show_sourcelink = False
html_copy_source = False
# furo loads no web font and no script from the network; nothing here adds one (tests/docs/ checks
# the built pages reference no http(s) script or style sheet).

# Nitpicky mode (-n, tests/docs/) reports every cross-reference that does not resolve. The build has
# no network, so there is no intersphinx inventory for the standard library or the libraries we
# build on: their types in signatures cannot resolve and are listed here. Our own names must
# resolve, except these internals that signatures mention and the reference leaves out on purpose.
nitpick_ignore_regex = [
    ("py:class", r"(pathlib|collections\.abc|typing|contextlib|argparse)\..*"),
    ("py:class", r"(nemo_run|torch|fiddle|omegaconf)\..*"),
    ("py:class", r"bridge_plugins\.plugins\.script_args\._ScriptArgs"),
    ("py:class", r"bridge_plugins\.runtime\.signals\.SignalGuard"),
    ("py:func", r"bridge_plugins\.jobdir\.scan\.scan_job_dir"),
    ("py:class", r"bridge_plugins\.analysis\.parallel\.Done"),
    # each analyzer's result class: documented field by field in analysis-schema.md, not twice
    ("py:class", r"bridge_plugins\.analysis\.analyzers\.[a-z_]+\.[A-Za-z]+"),
    ("py:class", r"bridge_plugins\.analysis\.nsys\.[a-z_]+\.[A-Za-z]+"),  # the same, for nsys reports
]
