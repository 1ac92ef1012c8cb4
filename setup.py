"""The one thing pyproject.toml cannot say without an experimental table: the native chunk reader,
a C extension (docs/architecture.md, "The native chunk reader"). Optional: where it does not build
(no C compiler), the install goes on and every chunk is read by msgspec and the Python loop."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "bridge_plugins.analysis.trace._native",
            ["bridge_plugins/analysis/trace/_native.c"],
            optional=True,
        )
    ]
)
