"""Profile the tiny GPT recipe with NeMo Run and bridge-plugins: the README's driver script.

Run it with the venv's Python, active or not (NeMo Run starts ``torchrun`` from PATH, so the
driver puts the venv's bin directory first):

    .venv/bin/python examples/profile_tiny_gpt.py

Two CPU ranks under torchrun on this machine; the PyTorch profiler captures steps 10-14 on rank 0
(memory history too, where there is a GPU). At the end it prints every artifact's path.
"""

import os
import sys
from pathlib import Path

import nemo_run as run

from bridge_plugins import PyTorchProfilerPlugin
from bridge_plugins.jobdir.scan import find_artifacts
from recipes.tiny_gpt import tiny_gpt_recipe

if __name__ == "__main__":  # NeMo Run imports the driver again in the job: launch only from here
    # NeMo Run starts `torchrun` from PATH: the one beside this Python (the venv's), even when the
    # venv is not active (without it: a FileNotFoundError for 'torchrun' after a long traceback)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    recipe = tiny_gpt_recipe()  # run.Partial(pretrain, config=ConfigContainer(...))
    executor = run.LocalExecutor(ntasks_per_node=2, launcher="torchrun")  # or run.SlurmExecutor(...)
    plugins = [
        PyTorchProfilerPlugin(
            profile_step_start=10,
            profile_step_end=15,
            profile_ranks=[0],
            record_shapes=True,
            record_memory_history=True,
            memory_snapshot_path="memory_snapshot.pickle",  # snapshots need a GPU
        )
    ]
    with run.Experiment("pytorch_profiling_experiment") as exp:
        exp.add(recipe, executor=executor, plugins=plugins, name="tiny_gpt")
        exp.run(sequential=True)  # waits for the job when the `with` block ends
    job_dir = exp.jobs[0].executor.job_dir
    found = find_artifacts(job_dir)
    print(f"\nArtifacts under {job_dir}:")
    for rank, paths in sorted(found.traces.items()):
        print("\n".join(f"  rank {rank} trace: {p}" for p in paths))
    for rank, paths in sorted(found.memory.items()):
        print("\n".join(f"  rank {rank} memory snapshot: {p}" for p in paths))
    print("\n".join(f"  nsys report: {p}" for p in found.nsys) or "", end="")
    if not (found.traces or found.memory or found.nsys):
        print(f"  none: see the job's logs under {job_dir}")
