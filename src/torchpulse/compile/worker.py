"""Models run in a worker process, as upstream runs each model in a child: a model that
hangs is killed at its timeout (status ``timeout``) and one that crashes the interpreter takes
only its own result with it. One worker serves model after model, so torch's import and the
compiler's one-off start-up are paid once; a killed or crashed worker is replaced."""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence

from torchpulse.compile.accuracy import FAIL_TO_RUN, TIMEOUT
from torchpulse.compile.report import ModelResult
from torchpulse.compile.run import Job, run_job


def _serve(conn, extra_sources: Sequence[str], threads: int | None) -> None:
    import torch

    from torchpulse.compile.providers import available_models

    if threads:
        torch.set_num_threads(threads)
    models = available_models(extra_sources)
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(run_job(job, models))


class Worker:
    def __init__(self, extra_sources: Sequence[str] = (), threads: int | None = None) -> None:
        self.extra_sources = tuple(extra_sources)
        self.threads = threads
        self._process = None
        self._conn = None

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")  # no forked torch/OpenMP state
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, self.extra_sources,
                                                             self.threads), daemon=True)
        self._process.start()
        child.close()
        self._conn = parent

    def run(self, job: Job, timeout: float) -> ModelResult:
        if self._process is None or not self._process.is_alive():
            self._start()
        self._conn.send(job)
        try:
            ready = self._conn.poll(timeout)
            if ready:
                return self._conn.recv()
        except (EOFError, ConnectionError):
            code = self._stop()
            return ModelResult(job.model, FAIL_TO_RUN, job.batch_size,
                               detail=f"the worker process died (exit code {code})")
        self._stop()
        return ModelResult(job.model, TIMEOUT, job.batch_size,
                           detail=f"no result within {timeout:g} s: killed", seconds=timeout)

    def _stop(self) -> int | None:
        process, self._process = self._process, None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if process is None:
            return None
        if process.is_alive():
            process.kill()
        process.join()
        return process.exitcode

    def close(self) -> None:
        if self._process is not None and self._process.is_alive() and self._conn is not None:
            try:
                self._conn.send(None)
                self._process.join(10)
            except (OSError, ValueError):
                pass
        self._stop()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
