"""Executors the plugins have never seen, for the tests of their refusals."""

from __future__ import annotations

import os

import nemo_run as run


class UnlistedExecutor(run.Executor):
    """An executor the plugins have never seen."""

    def assign(self, exp_id, exp_dir, task_id, task_dir):
        self.experiment_id, self.experiment_dir, self.job_dir = exp_id, exp_dir, os.path.join(exp_dir, task_dir)
