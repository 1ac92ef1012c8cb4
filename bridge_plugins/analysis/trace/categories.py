"""The event categories the collector reads, in both trace formats it accepts.

Today's Kineto format (torch 1.10 on) and torch 1.8-1.9's (capitalised categories, record_function
spans as ``Operator``): docs/analysis-schema.md, "Formats". One table, so that a category is
mapped in one place.
"""

from __future__ import annotations

import re

KERNEL = ("kernel", "Kernel")
MEMCPY = ("gpu_memcpy", "Memcpy", "memcpy")
MEMSET = ("gpu_memset", "Memset", "memset")
OPERATOR = ("cpu_op", "Operator", "operator")
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime", "runtime")
ANNOTATION = ("user_annotation",)
PYTHON = ("python_function",)
OLD_OPERATOR = frozenset(OPERATOR[1:])
"""The old format's operator categories, where torch's own record_function spans are too."""
TORCH_ANNOTATION_RE = re.compile(r"^(ProfilerStep#\d+$|enumerate\(Data(Loader|Pipe)\)#|Optimizer\.\w+#)")
"""The record_function spans torch itself opens (ProfilerStep#N, enumerate(DataLoader)#...,
Optimizer.step#SGD.step): an ``Operator`` of the old format with such a name is read as today's
``user_annotation``."""
