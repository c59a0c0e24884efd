"""The course's notebooks run in a real Jupyter kernel (nbclient, ipykernel): as CI runs them, with the solutions.

    python docs/notebook_run.py [NAME ...]   # run them at the tiny size, one after another, and record the seconds
                                             # each took in seqlab/course/notebooks/recorded.json (make notebooks)

:func:`with_solutions` puts each exercise's solution (docs/course/solutions/, as the site shows it:
:func:`course_pages.solution_source`) in place of its starter cell, so every cell must pass, the ``check`` cells
included; :func:`exercises_only` is every chapter's exercise cells as shipped (starter, then ``check``), which
must each report "not passed" in words. :func:`execute` runs a notebook top to bottom in a fresh kernel in a
folder of its own, with the datasets of ../shared/data linked into a cache as the site's build does
(:func:`kernel_env`). tests/test_notebooks.py uses all three; the site's test build then leaves these pages'
code out (``SEQLAB_DOCS_SKIP_NOTEBOOKS=1``): one run of a page's code serves both.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
if str(DOCS) not in sys.path:
    sys.path.insert(0, str(DOCS))

import course_pages  # noqa: E402
import notebook_pages  # noqa: E402

TIMEOUT_S = 900  # a cell's limit: a guard against a hang only


def load(name: str):
    """The committed notebook ``name`` as an nbformat node."""
    import nbformat

    return nbformat.reads((notebook_pages.OUT / f"{name}.ipynb").read_text(encoding="utf-8"), as_version=4)


def _exercise_of(cell) -> Any:
    """The exercise whose starter this code cell is, else None."""
    from seqlab import course

    if cell.cell_type != "code":
        return None
    return next((e for e in course.exercises() if cell.source.rstrip() == e.starter().rstrip()), None)


def with_solutions(nb):
    """``nb`` with every starter cell replaced by its exercise's solution, as the site shows it."""
    for cell in nb.cells:
        exercise = _exercise_of(cell)
        if exercise is not None:
            path = course_pages.solutions_file(exercise.chapter)
            cell.source = course_pages.solution_source(path, exercise.name).rstrip()
    return nb


def exercises_only(names: list[str]):
    """One notebook of the exercise cells of ``names`` as shipped: each starter cell and the ``check`` cell under
    it, nothing of the chapters' training."""
    import nbformat

    cells = []
    for name in names:
        source = load(name).cells
        for i, cell in enumerate(source):
            if _exercise_of(cell) is not None:
                cells += [cell, source[i + 1]]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata.kernelspec = notebook_pages.KERNEL
    return nb


def kernel_env(work: Path, shared: Path | None = None) -> dict[str, str]:
    """The kernel's environment: this one's, with the named datasets from ``shared`` (../shared/data) linked into a
    cache under ``work`` (``SEQLAB_CACHE``), the chapters' runs under ``work/.workdirs`` (``SEQLAB_DOCS_WORK``), one OpenMP
    thread (the tiny models, as the site's build runs them), the inline plots of a notebook."""
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "SEQLAB_DOCS_FULL")}
    shared = shared or Path(os.environ.get("SEQLAB_SHARED_DATA") or ROOT.parent / "shared" / "data")
    if shared.is_dir() and not os.environ.get("SEQLAB_CACHE"):
        from seqlab.data.download import link_cache

        env["SEQLAB_CACHE"] = str(link_cache(shared, work / ".seqlab-cache"))
    env.update(SEQLAB_DOCS_WORK=str(work / ".workdirs"), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


def execute(nb, folder: Path, env: dict[str, str], forks: KernelForks | None = None) -> float:
    """Run ``nb`` top to bottom in a fresh python3 kernel whose working folder is ``folder`` (forked by ``forks``,
    else started as Jupyter starts one); a cell that raises raises :class:`nbclient.exceptions.CellExecutionError`
    with its traceback. Returns the seconds it took, kernel start included. The kernel is killed once the last
    cell has run (nothing of it is kept; a graceful shutdown costs ~1 s of teardown)."""
    from nbclient import NotebookClient

    folder.mkdir(parents=True, exist_ok=True)
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", shutdown_kernel="immediate",
                            km=forks.manager() if forks else None, resources={"metadata": {"path": str(folder)}})
    start = time.perf_counter()
    # cleanup_kc: nbclient shuts down only the kernels of managers it made; a forked kernel's manager is ours, and
    # without it the kernel outlived its notebook and its connection file stayed in the temp folder
    client.execute(env=env, cwd=str(folder), cleanup_kc=True)
    return time.perf_counter() - start


class KernelForks:
    """Fresh kernels forked from one process that has imported ipykernel, torch, numpy, numba and matplotlib
    (docs/kernel_forks.py): a kernel then starts in ~0.1 s instead of 2.5-3 s of imports, each still a new process
    with its own shell, namespace, folder and environment. ``env`` is the kernels' environment (the server's; each
    kernel gets its own at :func:`execute`); close() ends the server and every kernel it forked."""

    def __init__(self, env: dict[str, str]):
        import subprocess

        # as ipykernel sets the backend, and as Jupyter names the parent (ipykernel reads it when imported)
        env = {**env, "MPLBACKEND": "module://matplotlib_inline.backend_inline", "JPY_PARENT_PID": str(os.getpid())}
        self.process = subprocess.Popen([sys.executable, str(DOCS / "kernel_forks.py")], env=env, cwd=str(ROOT),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self._line() != "ready":
            raise RuntimeError("docs/kernel_forks.py did not start; its error is above")

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def fork(self, args: list[str], env: dict[str, str], cwd: str) -> int:
        """The pid of a new kernel run with ipykernel's ``args`` (``-f CONNECTION_FILE``) in ``env`` and ``cwd``."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"args": args, "env": env, "cwd": cwd}) + "\n")
        self.process.stdin.flush()
        return int(self._line())

    def manager(self):
        """A kernel manager (jupyter_client) whose kernel is forked here, for nbclient."""
        from jupyter_client.manager import AsyncKernelManager

        forks = self

        class ForkedKernelManager(AsyncKernelManager):
            async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
                args = kernel_cmd[kernel_cmd.index("-f"):]  # after `python -m ipykernel_launcher`
                env = {**(kw.get("env") or os.environ), "JPY_PARENT_PID": str(os.getpid())}  # as Jupyter sets it
                cwd = str(kw.get("cwd") or os.getcwd())
                provisioner: Any = self.provisioner
                pid = forks.fork(args, env, cwd)
                provisioner.process = _Forked(pid)
                provisioner.pid = provisioner.pgid = pid
                provisioner.cwd = cwd
                self._reconcile_connection_info(provisioner.connection_info)

        return ForkedKernelManager(kernel_name="python3")

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> KernelForks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Forked:
    """What jupyter_client's local provisioner asks of a kernel's process (``subprocess.Popen``'s poll, wait,
    send_signal, kill, terminate), for a kernel forked by the server: not this process's child, reaped there."""

    stdin = stdout = stderr = None  # the kernel's streams are the server's: none to close here after wait()

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = 0
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                import subprocess

                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.02)
        return self.returncode or 0

    def send_signal(self, signum: int) -> None:
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.send_signal(9)

    def terminate(self) -> None:
        self.send_signal(15)


def outputs_text(cell) -> str:
    """What a cell showed, as text: its printed output, errors, and each display's markdown or plain text."""
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append("\n".join(out.traceback))
        else:
            data = out.get("data", {})
            parts.append(data.get("text/markdown") or data.get("text/plain") or "")
    return "\n".join(parts)


def record(names: list[str], work: Path) -> dict[str, Any]:
    """Run ``names`` one after another at the tiny size, as shipped (as a learner first runs them: the ``check``
    cells say "not passed"), and write the seconds each took (with the CPU and the date) into recorded.json.
    Returns the new tiny records."""
    from seqlab.base.machine import cpu_line

    tiny = notebook_pages.tiny_records()
    for name in names:
        folder = work / name
        seconds = execute(load(name), folder, kernel_env(folder))
        tiny[name] = {"seconds": round(seconds, 1), "cpu": cpu_line(),
                      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        print(f"{name}: {seconds:.1f} s", flush=True)
    (notebook_pages.OUT / "recorded.json").write_text(notebook_pages.recorded_text(tiny), encoding="utf-8")
    return tiny


if __name__ == "__main__":
    import tempfile

    chosen = sys.argv[1:] or list(notebook_pages.sources())
    with tempfile.TemporaryDirectory(prefix="seqlab-notebooks-") as tmp:
        record(chosen, Path(tmp))
    print(json.dumps({"recorded": chosen}))
