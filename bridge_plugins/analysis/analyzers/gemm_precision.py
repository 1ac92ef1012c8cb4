"""In which precision the GEMM and convolution kernels ran, and whether the GPU has Tensor Cores.

Kernel names say it (cuBLAS, cuDNN and CUTLASS name kernels by data type: the patterns below); a
name that says neither (Hopper's ``nvjet_*``) is not counted. Tensor Cores: an NVIDIA GPU of compute
capability 7.0 or more, from ``deviceProperties``. The rule and its limits: docs/diagnose.md
(``fp32_gemm``)."""

from __future__ import annotations

import re

from bridge_plugins.analysis.figures import GemmPrecision, KernelRow

GEMM_RE = re.compile(r"(?<!fb)gemm|conv|wgrad|dgrad|fprop", re.IGNORECASE)  # fbgemm_gpu is a library, not a GEMM
HALF_RE = re.compile(r"h1688|h884|h16816|hgemm|hcudnn|f16|fp16|bf16|half|e4m3|e5m2|fp8|int8|i8816", re.IGNORECASE)
FP32_RE = re.compile(r"sgemm|scudnn|s1688|s884|s16816|s161616|tf32|tfloat32|f32f32|\bfloat\b", re.IGNORECASE)
NOT_NVIDIA_RE = re.compile(r"AMD|Radeon|Instinct|gfx", re.IGNORECASE)


def _device(header: dict) -> tuple[str | None, float | None]:
    props = header.get("deviceProperties")
    devices = [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []
    majors = [(p.get("computeMajor"), p.get("computeMinor"), p.get("name")) for p in devices]
    known = [(int(a), int(b or 0), n) for a, b, n in majors if isinstance(a, int)]
    if not known:
        return (str(devices[0].get("name")) if devices else None), None
    a, b, name = min(known)
    return (str(name) if name is not None else None), a + b / 10


def gemm_precision(header: dict, kernels: list[KernelRow]) -> GemmPrecision | None:
    """The figures above; None for a trace without GPU kernels."""
    if not kernels:
        return None
    device, cc = _device(header)
    fp32: list[KernelRow] = []
    half_us = 0.0
    for k in kernels:
        name = k.name
        if not GEMM_RE.search(name):
            continue
        if HALF_RE.search(name):
            half_us += k.total_us
        elif FP32_RE.search(name):
            fp32.append(k)
    fp32.sort(key=lambda k: -k.total_us)
    nvidia = device is not None and not NOT_NVIDIA_RE.search(device)
    return GemmPrecision(
        device=device,
        compute_capability=cc,
        tensor_cores=bool(nvidia and cc is not None and cc >= 7.0),
        fp32_us=sum(k.total_us for k in fp32),
        half_us=half_us,
        fp32_kernels=fp32[:5],
    )
