"""``host_bound``: the GPU sits idle waiting for the host to give it work.

Real when the GPU's busiest stream is idle for at least ``MIN_IDLE_SHARE`` of the GPU span and most
of that is host wait (HTA's idle breakdown); launch-bound when kernels are shorter than their
launches. CPU-only: the training thread outside any operator for ``MIN_OUTSIDE_SHARE`` of the median
step. The input wait ``input_bound`` explains, and on CPU the collectives' time, are taken out
first. The rule in full: docs/diagnose.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge_plugins.analysis.findings.input_bound import explained_us
from bridge_plugins.analysis.findings.model import Finding, finding, median, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

if TYPE_CHECKING:  # a type only: the Summary's types load no analyzer (numpy); no cycle (tests/test_import_graph.py)
    from bridge_plugins.analysis.analyzers.idle import StreamIdle

KIND = "host_bound"
MIN_IDLE_SHARE = 0.20
MIN_HOST_WAIT_SHARE = 0.5
MIN_OUTSIDE_SHARE = 0.5

LAUNCH_ADVICE = [
    "Capture the step in CUDA graphs (Megatron Bridge: model.cuda_graph_impl / enable_cuda_graph; "
    "torch: torch.cuda.graphs or torch.compile(mode='reduce-overhead')) so one launch replaces hundreds.",
    "Give the GPU more work per launch: a larger micro_batch_size (fewer gradient-accumulation steps).",
    "Fuse small kernels: torch.compile, fused optimizers (AdamW(fused=True)), Megatron's "
    "gradient_accumulation_fusion and bias/activation fusions.",
]
INPUT_ADVICE = [
    "Feed the GPU ahead of time: DataLoader(num_workers>0, pin_memory=True, prefetch_factor>=2, "
    "persistent_workers=True); Megatron Bridge: dataset.num_workers and dataset.pin_memory.",
    "Move host work out of the step (logging, metrics, checkpoint I/O) or make it asynchronous.",
    "Remove synchronizations in the step (see sync_point) so the CPU can queue the next step.",
]


def _busiest_stream(trace: TraceSummary) -> StreamIdle | None:
    """The stream most computation runs on (communication streams wait on others by design)."""
    idle = trace.analyses.idle
    return max(idle.streams if idle else [], key=lambda s: (s.computation_us, s.busy_us), default=None)


def check(trace: TraceSummary) -> list[Finding]:
    base, a, rank = step_base(trace), trace.analyses, trace.rank
    explained = explained_us(trace)
    if trace.gpu is None:
        outside = [s.outside_ops_us for s in a.steps if s.outside_ops_us is not None]
        whole = median(outside)
        waiting = median([p.breakdown.communication_us for p in trace.per_step if p.breakdown])
        per_step = None if whole is None else whole - explained - (waiting or 0.0)
        if per_step is None or not base.median_us or per_step < MIN_OUTSIDE_SHARE * base.median_us:
            return []
        evidence = {
            "outside_ops_us_per_step": per_step,
            "steps": [s.step for s in a.steps],
        }
        if explained:
            evidence["input_wait_us_per_step_left_to_input_bound"] = explained
        title = f"rank {rank}: {100 * per_step / base.median_us:.0f} % of each step runs no operator (Python or other host work)"
        return [finding(KIND, title, base, per_step, evidence, INPUT_ADVICE, ranks=[rank], timeline=timeline_id(rank))]
    g, stream = trace.gpu, _busiest_stream(trace)
    input_wait = explained * base.steps  # GPU idle time input_bound explains, over the trace
    idle = g.idle_us - input_wait
    if stream is None or not g.span_us or idle < MIN_IDLE_SHARE * g.span_us:
        return []
    measured = stream.host_wait_us / stream.idle_us if stream.idle_us else 0.0
    host_wait = measured * g.idle_us - input_wait
    host_share = host_wait / idle if input_wait else measured
    if host_share < MIN_HOST_WAIT_SHARE:
        return []
    ls = a.launches
    launch_bound = bool(ls and ls.launches and ls.shorter_on_gpu >= 0.5 * ls.launches)
    per_step = base.per_step(host_wait)
    evidence = {
        "gpu_idle_us": idle,
        "gpu_idle_share_of_span": idle / g.span_us,
        "busiest_stream": stream.stream,
        "host_wait_share_of_idle": host_share,
        "kernels_shorter_than_launch": f"{ls.shorter_on_gpu} of {ls.launches}" if ls else None,
        "median_launch_delay_us": ls.launch_delay_us.median if ls else None,
        "median_kernel_us": ls.gpu_duration_us.median if ls else None,
        "median_outside_ops_us_per_step": median([s.outside_ops_us for s in a.steps if s.outside_ops_us is not None]),
        "mode": "launch-bound" if launch_bound else "host busy elsewhere (input, Python, syncs)",
    }
    title = (
        f"rank {rank}: the GPU waits on the host {100 * host_share:.0f} % of its idle time "
        f"({'launch-bound' if launch_bound else 'host busy elsewhere'})"
    )
    advice = LAUNCH_ADVICE + INPUT_ADVICE[:1] if launch_bound else INPUT_ADVICE + LAUNCH_ADVICE[:1]
    return [finding(KIND, title, base, per_step, evidence, advice, ranks=[rank], timeline=timeline_id(rank))]
