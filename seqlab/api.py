"""The Python API behind the command line: ``seqlab.train(config)`` and ``seqlab.load(run)``, and the openers
of "a run directory or a file": :func:`open_encoder` (sentence embeddings) and :func:`open_vectors` (word vectors).

Run directories (docs/manual.md, "A run directory"): an existing run is never overwritten without ``force``; ``resume``
continues it, and only ``train.max_steps`` / ``train.epochs`` (and ``train.max_minutes``, the wall-clock
budget, ``train.keep_last`` and the cosmetic ``train.progress``) may differ from the config it was started
with; train keys the task does not use are not compared (earlier versions recorded every train key). Under
``torchrun`` only rank 0 writes. One process writes a run, and a start that fails before the first checkpoint
leaves nothing behind (:mod:`seqlab.training.rundir`); readers never take the lock and see committed checkpoints only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import filecmp
import logging
import os
import shutil
import sys
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from seqlab.training import checkpoint, rundir
from seqlab.base import signals
from seqlab.base.config import DataConfig, RunConfig, TrainConfig, dumps_toml
from seqlab.base.errors import SeqlabError, given, spelled
from seqlab.base.outputs import check_replaceable
from seqlab.base.io import disk_full_message, is_disk_full, replace_atomic, write_text_atomic
from seqlab.tasks.arguments import check_config_source, check_out, check_run_arguments, checked_callbacks, placed_on
from seqlab.tasks.protocol import TaskHooks
from seqlab.tasks.registry import Resolved, resolve, resolve_run

if TYPE_CHECKING:  # annotations only: importing them here would load torch for `seqlab --help`
    import torch

    from seqlab.models.sentence import SentenceEncoder
    from seqlab.tasks.word_vectors import Embeddings
    from seqlab.tasks.trained import Trained
    from seqlab.vectors.keyed import KeyedVectors


class Interrupted(Exception):
    """Training stopped by SIGINT or SIGTERM after saving a checkpoint; ``exit_code`` is the shell's
    128 + signal number (130 after SIGINT, 143 after SIGTERM), what the CLI exits with."""

    def __init__(self, message: str, exit_code: int = 130):
        super().__init__(message)
        self.exit_code = exit_code


logger = logging.getLogger("seqlab")
INPUT_DIR = rundir.INPUT_DIR

RESUMABLE_CHANGES = {"train.max_steps", "train.epochs", "train.max_minutes", "train.progress", "train.keep_last"}


def _info(*args, **kwargs) -> None:
    """The library's default ``log``: an INFO record on the "seqlab" logger (the CLI passes its own printer)."""
    logger.info(" ".join(map(str, args)))


def _flatten(doc: dict) -> dict[str, object]:
    return {f"{section}.{key}": value for section, values in doc.items() for key, value in values.items()}


def config_differences(old: dict, new: dict, model_defaults: dict | None = None) -> list[str]:
    """The keys whose values differ; a data or train key (or a model key of ``model_defaults``, the run's model
    config's defaults) that an earlier version did not record counts as its default."""
    a, b = _flatten(old), _flatten(new)
    defaults = {**{f"data.{k}": v for k, v in dataclasses.asdict(DataConfig()).items()},
                **{f"train.{k}": v for k, v in dataclasses.asdict(TrainConfig()).items()},
                **{f"model.{k}": v for k, v in (model_defaults or {}).items()}}
    a = {**{k: v for k, v in defaults.items() if k in b}, **a}
    return sorted(k for k in set(a) | set(b) if _norm(a.get(k)) != _norm(b.get(k)))


def _defaults(model) -> dict[str, object]:
    """The default of each field of a model config (dataclass) that has one."""
    return {f.name: f.default for f in dataclasses.fields(model) if f.default is not dataclasses.MISSING} \
        if dataclasses.is_dataclass(model) else {}


def _norm(value):
    return list(value) if isinstance(value, tuple) else value


def _unused_train_key(key: str, cfg: RunConfig) -> bool:
    section, _, name = key.partition(".")
    return section == "train" and cfg.train_keys is not None and name not in cfg.train_keys


def read_run_config(run_dir: str | Path) -> RunConfig:
    """The config a run directory records (its ``config.toml``), resolved."""
    return _read_run(Path(run_dir)).config


def _read_run(run_dir: Path) -> Resolved:
    if not run_dir.exists():
        raise SeqlabError(f"run directory {run_dir} not found; train one with `seqlab train PRESET --out {run_dir}`")
    if not run_dir.is_dir():
        raise SeqlabError(f"{run_dir} is a file, not a run directory; give the folder `seqlab train` wrote")
    path = run_dir / "config.toml"
    if not path.exists():
        raise SeqlabError(f"{run_dir} is not a run directory (no config.toml); give the folder `seqlab train` wrote")
    # a run written by an earlier version records every train key: those its task does not use are dropped
    raw = rundir.located(tomllib.loads(path.read_text(encoding="utf-8")), run_dir)  # in-run inputs found where it is
    return resolve_run(raw, drop_unused=True)


def prepare_run_dir(cfg: RunConfig, run_dir: Path, *, resume: bool, force: bool, log=_info) -> rundir.RunLock:
    """Lock the run directory for this process: a new one, an existing one to continue (resume) or one to
    replace (force, moved aside until the new run's first checkpoint). What existed before is journalled in
    the lock, so that a failure before the first checkpoint undoes the start (``lock.close(failed=True)``)."""
    if run_dir.exists() and not run_dir.is_dir():
        raise SeqlabError(f"{given('out', run_dir)} is a file; give a folder path")
    if run_dir.exists():
        rundir.settle(run_dir, log)  # a live writer is refused; what a killed start left is undone
    has_content = run_dir.exists() and any(run_dir.iterdir())
    aside = None
    if has_content and resume:
        if (run_dir / "config.toml").exists():
            old = tomllib.loads((run_dir / "config.toml").read_text(encoding="utf-8"))
            old = rundir.inside_relative(old, run_dir)  # as this version records it
            changed = [k for k in config_differences(old, rundir.recorded_config(cfg, run_dir), _defaults(cfg.model))
                       if k not in RESUMABLE_CHANGES and not _unused_train_key(k, cfg)]
            spooled = rundir.in_memory_splits(old, changed, run_dir)
            if rundir.in_memory_splits(old, ["data.train"], run_dir):  # in-memory data: data.source is not read
                changed = [k for k in changed if k != "data.source"]
            if spooled:
                raise SeqlabError(f"cannot resume {run_dir}: it was trained on in-memory data; pass the same "
                                  f"{' and '.join(f'{split}_data' for split in spooled)} to resume")
            if changed:
                raise SeqlabError(f"cannot resume {run_dir}: {', '.join(changed)} differ from the run's config.toml; "
                                  "on resume only train.max_steps and train.epochs may change")
    elif has_content and not force:
        raise SeqlabError(f"run directory {run_dir} already exists; continue it with {spelled('resume')} or replace "
                          f"it with {spelled('force')}")
    elif has_content and force:
        check_replaceable(run_dir)  # a run (or another seqlab output) only: nothing else is ever moved or deleted
        rundir.RunLock.acquire(run_dir)  # hold the old run while it is moved aside (or cleared)
        aside = rundir.set_aside(run_dir)
        if aside is None:
            shutil.rmtree(run_dir)
    journal = rundir.journal_for(run_dir, resume=resume)
    if aside is not None:
        journal = {**cast("dict[str, Any]", journal), "replaced": str(aside)}  # not None: a replaced run is not resumed
    run_dir.mkdir(parents=True, exist_ok=True)
    return rundir.RunLock.acquire(run_dir, journal)


def _sigterm_ends(lock: rundir.RunLock | None, run_dir: Path):
    """SIGTERM outside the training loop (which saves and stops on it: :class:`seqlab.signals.StopSignals`): the
    process ends at once with 143 (:func:`seqlab.signals.undoing` with ``exit``), having undone the start (before
    the run's first checkpoint) or tidied the run as the next writer would and let go of it."""
    if lock is None:
        return contextlib.nullcontext()

    def undo() -> None:
        kept = lock.close(failed=True)
        outcome = _last_checkpoint(run_dir) if kept else "nothing of the new run was kept"
        sys.stderr.write(f"terminated by SIGTERM: {outcome}\n")

    return signals.undoing(undo, exit=True)


@contextlib.contextmanager
def _caller_state_kept(device: str | None, torch_free: bool = False):
    """The caller's process state, put back on leaving: torch's random state (the CPU generator, and the CUDA ones
    once CUDA is in use or the call runs on it: ``torch.manual_seed`` seeds them all), the thread counts of
    torch and numba, and the environment (torch sets ``TORCHINDUCTOR_CACHE_DIR`` when the optimizer first
    imports ``torch._dynamo``). Inside, the Trainer and the tasks seed torch's generators, :func:`_run_threads` sets
    ``train.threads`` as before, so a run, and its resume, draws the same numbers bit for bit. A CPU call in a
    process that has not started CUDA leaves the CUDA generators unstarted (with the seed torch queues for
    them when they start). Where the call imports no torch (``torch_free``: the task's ``torch_free(cfg,
    loading=)`` for training the run or reading it, as word vectors on the numba engine do) and the caller has not
    imported it either, there is no torch state to keep, and torch stays unimported."""
    keep_torch = "torch" in sys.modules or not torch_free
    numba_threads, environ = _numba_threads(), dict(os.environ)
    try:
        with _torch_state_kept(device) if keep_torch else contextlib.nullcontext():
            yield
    finally:
        _restore_numba_threads(numba_threads)
        for key in set(os.environ) - set(environ):
            del os.environ[key]
        for key, value in environ.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


@contextlib.contextmanager
def _torch_state_kept(device: str | None):
    """torch's part of :func:`_caller_state_kept`: its random state and its thread count."""
    import torch

    threads = torch.get_num_threads()
    cuda = torch.cuda.is_available() and (torch.cuda.is_initialized() or device in (None, "auto")
                                          or str(device).startswith("cuda"))
    try:
        with torch.random.fork_rng(devices=range(torch.cuda.device_count()) if cuda else []):
            yield
    finally:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def _numba_threads() -> int | None:
    """numba's thread count, or None while its threads are not launched (asking would launch them)."""
    numba = sys.modules.get("numba")
    if numba is None:
        return None
    try:
        numba.threading_layer()  # ValueError until the threads are launched
    except ValueError:
        return None
    return numba.get_num_threads()


def _restore_numba_threads(before: int | None) -> None:
    """Put numba's thread count back: ``before``, or, where its threads were launched since, the count they
    started with (``numba.config.NUMBA_NUM_THREADS``, what the caller would have had)."""
    numba = sys.modules.get("numba")
    if numba is None:
        return
    now = _numba_threads()
    if now is None:
        return
    wanted = numba.config.NUMBA_NUM_THREADS if before is None else before
    if now != wanted:
        numba.set_num_threads(wanted)


def _run_threads(cfg: RunConfig, task: TaskHooks) -> None:
    """``train.threads`` for the run, set by this entry point (the one owner of the process's thread counts in a
    library call; :func:`_caller_state_kept` puts the caller's back): numba's pool for the kernels of a run that
    imports no torch (word vectors on the numba engine: one thread per Hogwild share, 0 = every core numba may
    use), else torch's (0 = torch's default: left as it is)."""
    if task.torch_free(cfg):
        import numba

        from seqlab.models.word2vec_kernels import numba_threads

        numba.set_num_threads(numba_threads(cfg.train.threads))
    elif cfg.train.threads:
        import torch

        torch.set_num_threads(cfg.train.threads)


def train_run(cfg: RunConfig | str, out: str | Path | None = None, *, overrides: list[str] | None = None,
              resume: bool | Literal["auto"] = False, force: bool = False, log: Callable[..., Any] | None = None,
              callbacks: Iterable[Any] = ()) -> Path:
    """Train a run config (a RunConfig, a preset name or a TOML path, with ``overrides``, "section.key=value"
    strings, applied: a RunConfig's too, never dropped) into ``out``; returns the run directory: what ``seqlab
    train`` runs (:func:`train` is the notebook form, returning the trained object).

    The run directory appears when training starts: an error before the run's first checkpoint (bad data, a
    full disk, SIGTERM) removes what this call created and puts back what ``force`` replaced. One process
    writes a run (``lock.json``); a second one is refused. The caller's random state, thread counts and
    environment are as they were afterwards (:func:`_caller_state_kept`): ``train.threads`` and ``train.seed``
    hold for the run only. ``resume``: True, False or ``"auto"`` (:func:`seqlab.training.rundir.resume_wanted`)."""
    check_out(out)
    check_run_arguments(overrides=overrides, resume=resume, force=force, log=log)
    check_config_source(cfg)
    callbacks = checked_callbacks(callbacks)
    run_dir = Path(out) if out else Path("runs") / (Path(cfg).stem if isinstance(cfg, str) else cfg.task.kind)
    resume = rundir.resume_wanted(resume, run_dir)
    run = resolve_run(cfg, overrides=overrides, run_dir=run_dir, resume=resume)
    return _train_resolved(run, run_dir, resume=resume, force=force, log=log or _info, callbacks=callbacks)


def _train_resolved(run: Resolved, run_dir: Path, *, resume: bool, force: bool, log: Callable[..., Any],
                    callbacks: Iterable[Any]) -> Path:
    """Train the resolved run into ``run_dir`` (:func:`train_run`, :func:`train`)."""
    if resume:
        rundir.check_resume_length(run.config, run_dir, run.task.LENGTH_KEY)
    # _run_threads sets train.threads, the Trainer seeds torch
    with _caller_state_kept(run.config.train.device, run.task.torch_free(run.config)):
        return _train_run(run, run_dir, resume=resume, force=force, log=log, callbacks=callbacks)


def _train_run(run: Resolved, run_dir: Path, *, resume: bool, force: bool, log: Callable[..., Any],
               callbacks: Iterable[Any]) -> Path:
    from seqlab.training.callbacks import calling
    from seqlab.training.devices import init_distributed

    cfg, task, inputs = run.config, run.task, run.inputs
    dist = init_distributed("cuda" if cfg.train.device == "cuda" else "cpu")
    _run_threads(cfg, task)
    lock = prepare_run_dir(cfg, run_dir, resume=resume, force=force, log=log) if dist.main else None
    with _sigterm_ends(lock, run_dir):
        try:
            if dist.main and inputs:
                _take_inputs(run_dir, inputs)
            dist.barrier()
            if dist.main:
                write_text_atomic(run_dir / "config.toml", dumps_toml(rundir.recorded_config(cfg, run_dir)))
            with calling(callbacks):
                state = task.train(cfg, run_dir, resume=resume, dist=dist,
                                   log=log if dist.main else (lambda *a, **k: None))
            if dist.main and not state.get("plotted"):  # a task may have drawn it beside its last writes
                from seqlab.views.viz import plot_loss

                chosen = state.get("best_step") if checkpoint.exists(run_dir / "best") else None
                plot_loss(run_dir / "metrics.jsonl", run_dir / "plots" / "loss.png", chosen_step=chosen)
            dist.barrier()  # the last checkpoint is committed before any process reads the run (seqlab.train)
        except BaseException as e:
            kept = lock.close(failed=True) if lock else True
            shown = _explained(e, run_dir, kept)
            if shown is e:
                raise
            raise shown from None
        if lock:
            lock.close(failed=False)
    if state.get("interrupted"):
        import signal

        signum = state.get("signal") or signal.SIGINT
        raise Interrupted(f"interrupted by {signal.Signals(signum).name}: checkpoint saved at step {state['step']} "
                          f"in {run_dir}; continue with {spelled('resume')}",
                          exit_code=128 + signum)
    return run_dir


def train(preset_or_config: RunConfig | str, out: str | Path | None = None, *, train_data: Any = None,
          valid_data: Any = None, test_data: Any = None, config: dict[str, dict[str, Any]] | None = None,
          overrides: list[str] | None = None, resume: bool | Literal["auto"] = False, force: bool = False,
          callbacks: Iterable[Any] = (), device: str | None = None,
          log: Callable[..., Any] | None = None) -> Trained:
    """Train a run and return its trained object: what :func:`load` returns for the run (a LanguageModel,
    SequenceTagger, SentenceClassifier, Translator, Forecaster or Embeddings; :func:`load` lists their verbs),
    with the weights of the best checkpoint (the best validation score, ``train.keep_best``; the final one when
    the run kept no best), ``.run_dir``, ``.config``, ``.metrics`` and ``.checkpoint``.

    Every argument is checked before anything is written or trained: a mistake is one :class:`SeqlabError`
    line, and no run directory appears.

    - ``preset_or_config``: a preset name (``seqlab.presets()``), a TOML path or a RunConfig.
    - ``out``: the run directory (a str or a Path, not a file); None writes a fresh ``runs/<preset>-<timestamp>``,
      named in an INFO record on the ``seqlab`` logger (shown once logging shows INFO, e.g.
      ``logging.basicConfig(level=logging.INFO)``) and in the returned object's ``run_dir``.
    - ``train_data`` / ``valid_data`` / ``test_data``: in-memory data in the task's form (lm: a str or strings;
      embed: token lists or strings; tag: lists of (token, tag); classify: (text, label) pairs, or a pandas
      DataFrame with ``text`` and ``label`` columns (or two columns, text first); translate: (source, target);
      forecast: a 1-D series), written once into ``RUN/input/`` in the task's file format, which the run's
      ``data.train`` / ``valid`` / ``test`` then name (so ``config.toml``, resume, ``seqlab eval`` and ``seqlab
      serve`` work as for files). Without ``valid_data`` / ``test_data``, ``data.split`` cuts them.
    - ``config``: sections of keys on top of the preset, ``{"model": {"n_layers": 4}, "train": {"max_steps":
      500}}``, checked as ``--set`` is (an unknown or unused key is an error naming the valid ones);
      ``overrides``: then a list of "section.key=value" strings.
    - ``resume``: True continues the run in ``out`` (an error when it does not exist: nothing is created),
      ``"auto"`` continues a run that exists and starts one that does not, False (the default) starts a run.
    - ``force``: replace the run already in ``out`` (it is kept until the new run's first checkpoint); not with
      ``resume``.
    - ``callbacks``: a list of objects with any of ``on_step(row)``, ``on_eval(row)``, ``on_checkpoint(row)``
      (plain dicts); one returning False stops training cleanly after a checkpoint.
    - ``device``: where training runs and the returned object is placed: "auto" (CUDA when present), "cpu" or
      "cuda"; it sets ``train.device`` (a config that sets another is refused). None: ``train.device``.
    - ``log``: a function taking each message line (``print``, say); None logs them as INFO records on the
      ``seqlab`` logger.

    Progress: a tqdm bar on a terminal or in a notebook (``train.progress``); elsewhere, and with
    ``train.progress = false``, one summary line per evaluation through ``log``. Ctrl-C (a notebook's Interrupt)
    saves a checkpoint and raises :class:`Interrupted`; ``resume=True`` continues. Under ``torchrun`` every
    process returns the object."""
    check_out(out)
    check_run_arguments(overrides=overrides, resume=resume, force=force, log=log)
    check_config_source(preset_or_config)
    callbacks = checked_callbacks(callbacks)
    name = Path(preset_or_config).stem if isinstance(preset_or_config, str) else preset_or_config.task.kind
    run_dir = Path(out) if out is not None else fresh_run_dir(name)
    resume = rundir.resume_wanted(resume, run_dir)  # before any write: a missing run to resume creates nothing
    data = {"train": train_data, "valid": valid_data, "test": test_data}
    with contextlib.ExitStack() as stack:  # holds the folder in-memory data is staged in until the run takes it
        run = resolve_run(preset_or_config, sections=config, overrides=overrides, device=device, data=data,
                          run_dir=run_dir, resume=resume, stack=stack)
        if out is None:
            (log or _info)(f"training {name} into {run_dir}")
        _train_resolved(run, run_dir, resume=resume, force=force, log=log or _info, callbacks=callbacks)
    return load(run_dir, device=placed_on(run.config))


def fresh_run_dir(name: str, root: Path = Path("runs")) -> Path:
    """``runs/NAME-YYYYmmdd-HHMMSS`` (``-2``, ``-3``... when that exists): where :func:`train` writes a run
    given no ``out``."""
    import time

    base = root / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def _take_inputs(run_dir: Path, staged: Path) -> None:
    """Move the staged in-memory data into ``RUN/input/``; on resume the files there must be identical."""
    folder = run_dir / INPUT_DIR
    for file in sorted(staged.iterdir()):
        kept = folder / file.name
        if kept.exists():
            if not filecmp.cmp(kept, file, shallow=False):
                what = file.name.partition(".")[0]
                raise SeqlabError(f"{what}_data differs from the data {run_dir} was trained on ({kept}); "
                                  "give the same data to resume, or train into a new out= (or force=True)")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        replace_atomic(file, kept)  # a rename: the staging folder is beside the run (staging_dir)


def presets() -> list[str]:
    """The names of the presets :func:`train` takes, sorted (``seqlab presets`` lists them with a line each)."""
    from seqlab.base.config import preset_names

    return preset_names()


def preset_config(name: str) -> dict[str, dict[str, Any]]:
    """A preset's resolved config, ``{section: {key: value}}``: every key a run of it records in
    ``config.toml``, the preset's own values over the defaults (``preset_config("ner-bilstm-crf")["train"]
    ["max_steps"]`` is 12000). Change keys with ``train(name, config={...})``."""
    from seqlab.base.config import preset_names

    if not isinstance(name, str) or name not in preset_names():
        raise SeqlabError(f"unknown preset {name!r}; valid presets: {', '.join(preset_names())}")
    return resolve(name).to_dict()


def prepare(cfg: RunConfig | str, out: str | Path, *, overrides: list[str] | None = None, force: bool = False,
            progress: bool = True) -> dict:
    """Prepare a config's data once into the folder ``out`` (``seqlab data prepare``), for runs to reuse with
    ``data.prepared=OUT``; returns its manifest. The folder appears complete or not at all; an existing one
    is replaced only with ``force``. Language modelling (task.kind = lm) only, for now."""
    run = resolve_run(cfg, overrides=overrides)
    cfg, prepare_task = run.config, run.task.prepare
    if prepare_task is None:
        raise SeqlabError(f'seqlab data prepare supports task.kind = "lm"; this config has task.kind = '
                          f'"{cfg.task.kind}", whose data `seqlab train` prepares in the run directory')
    return prepare_task(cfg, Path(out), force=force, progress=progress)


def _explained(e: BaseException, run_dir: Path, kept: bool) -> BaseException:
    """The error to show for ``e`` once the start was undone (``kept`` False) or the lock released."""
    if is_disk_full(e):
        e = cast(OSError, e)  # is_disk_full checked it
        if not kept:
            return SeqlabError(f"{disk_full_message(e)}; nothing of the new run {run_dir} was kept; free some space "
                               "and run the command again")
        where = _last_checkpoint(run_dir)
        return SeqlabError(f"{disk_full_message(e)}; {where}; free some space and continue with {spelled('resume')}")
    return e


def _last_checkpoint(run_dir: Path) -> str:
    if not checkpoint.exists(run_dir):
        return f"{run_dir} has no checkpoint yet"
    return f"the last checkpoint (step {checkpoint.load_state(run_dir).get('step')}) in {run_dir} is intact"


def checkpoint_dir(run_dir: str | Path, last: bool = False) -> Path:
    """Where the checkpoint a reader uses lives: the run's ``best/`` (the best validation loss, kept by
    ``train.keep_best``) by default, the run directory itself (the final checkpoint) with ``last`` or when
    the run kept no best. Both are committed atomically, so a run still training is read safely."""
    run_dir = Path(run_dir)
    if not last and checkpoint.exists(run_dir / "best"):
        return run_dir / "best"
    if not checkpoint.exists(run_dir):
        raise SeqlabError(f"{run_dir} has no checkpoint yet; train it with `seqlab train ... --out {run_dir}`")
    return run_dir


def load(run_dir: str | Path, device: str | None = None, last: bool = False) -> Trained:
    """The trained object of a run directory (what ``seqlab train`` or :func:`train` wrote), for its task:

    - lm: a LanguageModel (``generate``, ``score``, ``evaluate``, ``attention``);
    - tag: a SequenceTagger (``tag``, ``entities``, ``predict``, ``evaluate``);
    - classify: a SentenceClassifier (``classify``, ``predict``, ``evaluate``);
    - translate: a Translator (``translate``, ``predict``, ``evaluate``);
    - forecast: a Forecaster (``forecast``, ``predict_next``, ``predict``, ``evaluate``, ``plot``);
    - embed: Embeddings (``neighbors``, ``analogy``, ``most_similar``, ``similarity``, ``map``, ``evaluate``,
      and ``vectors``, the KeyedVectors).

    Every one has ``run_dir``, ``config``, ``metrics``, ``save`` and ``checkpoint`` (the ``state.json`` of the
    checkpoint used: ``step``, ``best_valid_loss``..., and ``dir``).

    - ``run_dir``: the run directory (a str or a Path).
    - ``device``: where the model is placed: None or "auto" (CUDA when present), "cpu", "cuda" or "cuda:N";
      anything else, or a CUDA device on a machine without one, is an error before anything is read.
    - ``last``: False (the default) loads the best checkpoint (the run's ``best/``, kept by ``train.keep_best``;
      the final one when the run kept no best); True loads the final checkpoint."""
    from seqlab.training.devices import check_inference_device

    check_inference_device(device)  # a device that is no device is refused before anything is read
    if not isinstance(run_dir, (str, os.PathLike)):
        raise SeqlabError(f"run_dir must be a run directory's path (a str or a Path), got a {type(run_dir).__name__}")
    if not isinstance(last, bool):
        raise SeqlabError(f"last must be True or False, got {last!r}")
    run_dir = Path(run_dir)
    run = _read_run(run_dir)
    cfg = run.config
    weights = checkpoint_dir(run_dir, last)
    try:
        with _caller_state_kept(device, run.task.torch_free(cfg, loading=True)):
            for _ in range(5):  # a checkpoint committed while we loaded (the run is training): load again
                state = checkpoint.load_state(weights)
                obj = run.task.load(run_dir, cfg, device=device, weights=weights)
                if checkpoint.load_state(weights) == state:
                    break
    except checkpoint.DamagedCheckpoint as e:
        other = (f"without {spelled('last')} (best/)" if last or weights == run_dir
                 else f"with {spelled('last')} (the final one)")
        raise SeqlabError(f"{e}; read the other checkpoint ({other}) or continue the run with `seqlab train ... "
                          "--resume`, which falls back to an intact earlier checkpoint") from None
    obj.checkpoint = {**state, "dir": str(weights)}
    return obj


def open_encoder(run_or_dir: str | Path, device: str | torch.device | None = None) -> SentenceEncoder:
    """The sentence encoder behind RUN_OR_DIR: a pretrained directory or model name, or a run directory.

    A run directory (it has ``config.toml``) is loaded with :func:`load`; its object provides the embeddings
    through a ``sentence_encoder()`` method returning a :class:`~seqlab.models.sentence.SentenceEncoder`, or
    None when the run has no pretrained encoder (the hook for runs fine-tuned from one).
    """
    from seqlab.models.sentence import SentenceEncoder

    path = Path(run_or_dir)
    if (path / "config.toml").is_file():
        obj = load(path, device=None if device is None else str(device))
        make = getattr(obj, "sentence_encoder", None)
        encoder = None if make is None else make()
        if encoder is None:
            raise SeqlabError(f"{path} is a {obj.config.task.kind} run without a pretrained encoder, so it has no "
                              "sentence embeddings; give a run fine-tuned from one, a BERT-style directory, or "
                              "all-MiniLM-L6-v2")
        return encoder
    return SentenceEncoder.from_pretrained(run_or_dir, device)


def open_vectors(path: str | Path) -> KeyedVectors:
    """Word vectors from an embedding run directory (its best checkpoint), a word2vec text or binary file, a
    headerless GloVe text file (the format is read from the file) or a KeyedVectors safetensors file."""
    from seqlab.vectors.keyed import KeyedVectors

    path = Path(path)
    if path.is_dir():
        kind = read_run_config(path).task.kind
        if kind != "embed":
            raise SeqlabError(f"{path} is a {kind} run, which has no word vectors; "
                              "give an embedding run (task.kind = \"embed\") or a vectors file")
        return cast("Embeddings", load(path)).vectors  # an embed run's object
    if not path.exists():
        raise SeqlabError(f"{path} not found; give a run directory or a vectors file (.txt, .safetensors)")
    if path.suffix == ".safetensors":
        return KeyedVectors.load(path)
    return KeyedVectors.load_word2vec_format(path)
