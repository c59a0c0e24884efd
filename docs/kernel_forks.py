"""A fork server of Jupyter kernels: one process imports what every notebook's kernel imports (ipykernel, torch,
numpy, numba, matplotlib, scikit-learn, sacrebleu), then forks a fresh kernel per notebook, so the eight kernels of tests/test_notebooks.py
pay those imports once (2-3 s of each kernel's start on a 2-core CPU) instead of eight times.

    python docs/kernel_forks.py MODULE ...   # stdin: one JSON request a line {"args", "env", "cwd"}; stdout: pids

Each child is a new process and a new kernel (its own IPython shell, namespace, working folder, environment and
session, as ``python -m ipykernel_launcher`` makes one): only the third-party modules above are already imported.
Nothing of seqlab is imported here (its modules read their environment when imported). The server's environment
is the kernels' own (the same thread settings), and ``MPLBACKEND`` is the inline backend ipykernel would choose.
docs/notebook_run.py starts it (:class:`notebook_run.KernelForks`) and hands its kernels to nbclient.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys

# third-party only, each optional (one missing fails in the kernel that imports it, as it would unforked);
# sklearn.manifold: t-SNE of seqlab's word maps (1.2 s), sklearn: the NER metrics, sacrebleu: chapter 05
PRELOAD = ("ipykernel.kernelapp", "torch", "numpy", "numba", "matplotlib.pyplot", "sklearn.manifold", "sacrebleu")


def _child(request: dict) -> None:
    """In the forked process: become a kernel with the request's arguments, environment and folder."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the kernel's own subprocesses are waited for as usual
    os.setsid()  # its own process group, as jupyter_client starts a kernel (interrupts go to the group)
    try:  # die with the server (the server dies with the test process)
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stdout was the pipe to the test process
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = [sys.argv[0], *request["args"]]
    from ipykernel import kernelapp

    try:
        kernelapp.launch_new_instance(argv=request["args"])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main(modules: list[str]) -> None:
    del sys.path[0]  # this script's folder (docs/); ipykernel_launcher removes the working folder likewise
    for name in modules or PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernels are reaped as they exit
    print("ready", flush=True)
    children = []
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        children.append(pid)
        print(pid, flush=True)
    for pid in children:  # the test process is gone or done: no kernel outlives it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


if __name__ == "__main__":
    main(sys.argv[1:])
