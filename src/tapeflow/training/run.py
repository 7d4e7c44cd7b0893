"""One training run: ``tapeflow.train(config)``, behind ``tapeflow train CONFIG.yaml``.

A run validates its config, loads and splits the data, seeds the one random
state that drives every draw (initial weights, each epoch's shuffle, dropout),
builds the model, trains it with ``Model.fit`` and ordinary callbacks (``EarlyStopping``,
``NanWatch``, ``History``, ``checkpointing.RunCheckpoints``, ``run_history.RunHistoryWriter``,
TensorBoard, the progress bar)
and writes, in its run directory:

- ``config.yaml``: the resolved config, the seed used included (and, for texts,
  ``vocabulary.txt``: the token ids' vocabulary);
- ``checkpoints/epoch-NNNN.h5`` every ``checkpoint.every`` epochs (the last
  ``keep_last`` kept) and ``checkpoints/best.h5``; ``model.h5`` when it ends;
- ``history.csv`` / ``history.json`` (a row per epoch), ``learning_curve.png``,
  ``test_metrics.json`` (printed too).
- with ``logging.tensorboard``, event files under ``tensorboard/``; with ``logging.mlflow``,
  ``mlflow_run.json`` naming the MLflow run it logs to (``mlflow_log``), and the default store
  under ``mlflow/``.

A checkpoint is written at the end of an epoch and holds the random state as
the next epoch would start from it, so ``resume=True`` rebuilds the model from
the run's config, restores weights, optimizer, random state, history and
callback state, and trains on from that epoch: the result is the same, bit for
bit, as a run that never stopped.  With ``checkpoint.every_steps: N`` one is
also written every N steps (only the newest is kept): it holds the steps done
into the epoch, the seed of the epoch's shuffle order and the metrics' running
state, and a resume skips the batches done and goes on at the next one.
``resume=True`` on a directory that does not exist yet (or is empty) starts
the run, so a preemptible job can run the same command every time.  A SIGTERM
finishes the current step, writes a checkpoint and raises ``Preempted``
(``tapeflow train`` exits with status 75, ``preemption.PREEMPTED_STATUS``).
A loss that turns NaN stops the run with a ``TrainingError`` naming the epoch
and step; the checkpoints written before it are kept.
"""
import dataclasses
import json
import os
import sys

import numpy as np

from .. import backend
from .. import callbacks as callbacks_module
from ..core.context import context, reset
from ..device import device as tf_device
from ..distribute import launch
from ..ops import random as random_ops
from ..saving.atomic import make_directory, write_text_atomically
from . import checkpoint as ckpt_io
from . import preemption
from ..callbacks.recorders import NanWatch
from .build import build_model
from .checkpointing import RunCheckpoints
from .run_history import RunHistoryWriter
from .mlflow_log import MlflowLog, check_installed as check_mlflow_installed
from .run_config import RunConfig, dump_yaml, load_config, parse_config
from .data_sources import load_data
from .named_sources import n_rows
from .text_image_sources import VOCABULARY_NAME, vocabulary_text
from .errors import CheckpointError, ConfigError, TrainingError, UserError

__all__ = ["train", "Run", "check_device"]

CONFIG_NAME = "config.yaml"
# keys a resumed run may change: how long it trains, how it reports, and on which device
_RESUMABLE_CHANGES = ("training.epochs", "logging.", "device", "checkpoint.every_steps")


@dataclasses.dataclass
class Run:
    """What ``train`` returns: the trained model, its history and where the run lives."""
    model: object
    history: dict
    test_metrics: dict
    run_dir: str
    config: dict

    def __iter__(self):  # model, history = tapeflow.train(...)
        return iter((self.model, self.history))


@dataclasses.dataclass(frozen=True)
class _RunPlan:
    """What the set-up settled, the same on every rank: the run ``_train_on_device`` carries
    out (one object in place of a dozen positional arguments)."""
    strategy: object  # an MPIStrategy under mpiexec -n N>1, else None
    cfg: RunConfig
    resolved: dict  # the config as run_dir/config.yaml holds it
    resumed: object  # where a resumed run goes on from, or None
    dataset: object
    where: str  # the config's file, or "config"
    base_dir: str  # the config's relative paths start here
    run_dir: str
    allow_builder: bool
    verbose: bool
    stream: object
    stop: object  # preemption.sigterm_requests()'s flag

    @property
    def root(self):
        """True on the process that reads and writes the run (rank 0, or the only one)."""
        return self.strategy is None or self.strategy.rank == 0


def train(config, *, output=None, resume=False, overrides=(), seed=None, device=None,
          allow_builder=False, verbose=True, stream=None):
    """Train the model ``config`` describes (a YAML path, a dict or a ``RunConfig``).

    ``output``: the run directory (default ``runs/<config name>``); ``resume``:
    continue the run there from its last good checkpoint.  ``overrides`` are
    ``--set`` strings; ``seed`` and ``device`` override ``training.seed`` and ``device``.
    The calling thread's context is reset first (``clear_session``), so that the run
    draws and names exactly as the command line's would.  A SIGTERM while it runs (in the
    main thread) ends the current step, writes a checkpoint and raises ``Preempted``.
    """
    stream = stream if stream is not None else sys.stdout
    overrides = list(overrides)
    if seed is not None:
        overrides.append(f"training.seed={int(seed)}")
    if device is not None:
        overrides.append(f"device={device}")
    strategy = launch.trainer_strategy(ConfigError)  # None unless under mpiexec -n N>1
    with launch.one_message(strategy, UserError, "tapeflow train: error: "), \
            preemption.sigterm_requests() as stop:
        return _train(strategy, config, output, resume, overrides, allow_builder, verbose, stream,
                      stop)


def _train(strategy, config, output, resume, overrides, allow_builder, verbose, stream, stop):
    """``train`` on this process.  Under MPI the set-up runs in one collective-failure scope:
    each rank runs every set-up step on its own (``_set_up`` makes no MPI call), then one
    ``together`` raises any rank's error on every rank, so that all ranks stop there or none;
    then one gather checks that the ranks agree, and rank 0's resume point goes to all."""
    root = strategy is None or strategy.rank == 0  # the one that reads and writes the run
    local = launch.together(strategy, UserError, _set_up, root, config, overrides, output,
                            resume)
    launch.together(strategy, UserError, _same_as_rank_0, strategy, local)
    cfg, where, base_dir, run_dir, dataset = (local.cfg, local.where, local.base_dir,
                                               local.run_dir, local.dataset)
    resumed = launch.broadcast(strategy, local.resumed)
    if resume and verbose and root:
        print(f"--resume: {_where_resumed(run_dir, resumed)}", file=stream)
    resolved = resumed.config if resumed is not None else launch.broadcast(strategy,
                                                                           cfg.resolved())
    if resumed is not None:  # the run's config, with only what a resume may change taken anew
        resolved = dict(resolved, training=dict(resolved["training"],
                                                epochs=cfg.training.epochs),
                        logging=cfg.logging.model_dump(mode="json"), device=cfg.device)
        cfg = RunConfig.model_validate(resolved)
        if isinstance(resumed, _NoCheckpointYet):
            resumed = None
    if resumed is not None and resumed.training["data_fingerprint"] != dataset.fingerprint:
        raise CheckpointError(f"{resumed.path}: the data differ from those the run was trained "
                              f"on (their fingerprints differ); resume with the same data")
    plan = _RunPlan(strategy=strategy, cfg=cfg, resolved=resolved, resumed=resumed,
                    dataset=dataset, where=where, base_dir=base_dir, run_dir=run_dir,
                    allow_builder=allow_builder, verbose=verbose, stream=stream, stop=stop)
    with tf_device(launch.device_name(strategy, cfg.device)):  # under MPI, a GPU per rank
        return _train_on_device(plan)


def _train_on_device(plan):
    """Build, train and finish the run: weights, data batches and draws on ``cfg.device``."""
    reset()  # a fresh context: layer names and the random state as in a new process
    random_ops.set_seed(plan.resolved["training"]["seed"])
    strategy, run_dir = plan.strategy, plan.run_dir
    with launch.scope(strategy):  # compiled inside: fit shards batches and sums gradients
        model = launch.together(strategy, UserError, build_model, plan.cfg, plan.dataset,
                                plan.where, plan.base_dir, plan.allow_builder)
    if plan.root:
        make_directory(os.path.join(run_dir, ckpt_io.CHECKPOINT_DIR))
        for directory in (run_dir, os.path.join(run_dir, ckpt_io.CHECKPOINT_DIR)):
            ckpt_io.clean_temporaries(directory)  # left by a crash mid-write; never read
        _write_text(os.path.join(run_dir, CONFIG_NAME), dump_yaml(plan.resolved))
        vocabulary = vocabulary_text(plan.dataset)
        if vocabulary is not None:  # predict takes raw texts through it
            _write_text(os.path.join(run_dir, VOCABULARY_NAME), vocabulary)
    trainer = _Trainer(model, plan.cfg, plan.resolved, plan.dataset, plan.base_dir, run_dir,
                       plan.verbose and plan.root, plan.stream, strategy, plan.stop)
    if plan.resumed is not None:
        trainer.restore(plan.resumed)
    trainer.open_logs()
    try:
        trainer.fit()
        return trainer.finish()
    except BaseException as error:  # the MLflow run, if any, ends as KILLED or FAILED
        trainer.close_logs(error)
        raise


def _run_dir_checked(run_dir, cfg, where, resume):
    """Where a resumed run goes on from (None for a new run), the run directory checked."""
    if resume:
        return _resume_point(run_dir, cfg, where)
    _refuse_existing_run(run_dir)
    return None


def _where_resumed(run_dir, resumed):
    if resumed is None:
        return f"{run_dir} holds no run yet; starting it"
    passed = "".join(f"; skipped {e}" for e in getattr(resumed, "skipped", ()))
    if resumed.path is None:
        return f"{run_dir} has no usable checkpoint yet; starting its run again{passed}"
    step = resumed.training.get("step", 0)
    at = f"epoch {resumed.epoch + 1}, step {step}" if step else f"epoch {resumed.epoch}"
    return f"going on from {resumed.path} (after {at}){passed}"


@dataclasses.dataclass(frozen=True)
class _LocalSetUp:
    """What one rank's set-up found: its config, run directory and data (``resumed``: where a
    resumed run goes on from, read on rank 0 alone)."""
    cfg: RunConfig
    where: str
    base_dir: str
    run_dir: str
    resumed: object
    dataset: object


def _set_up(root, config, overrides, output, resume):
    """The set-up steps, on this process alone (no MPI call: ``_train`` runs them together)."""
    cfg, where, base_dir = _config(config, overrides)
    check_device(cfg.device)
    if cfg.logging.mlflow is not None:
        check_mlflow_installed(cfg.logging.mlflow)
    run_dir = os.path.abspath(output or os.path.join(
        "runs", os.path.splitext(os.path.basename(where))[0]))
    resumed = _run_dir_checked(run_dir, cfg, where, resume) if root else None
    dataset = load_data(cfg.data, base_dir)
    return _LocalSetUp(cfg, where, base_dir, run_dir, resumed, dataset)


def _same_as_rank_0(strategy, local):
    """Refuse to train when a rank's config (or data) differ from rank 0's, naming where:
    the ranks would train different problems, or wait forever for one another."""
    seed_given = local.cfg.training.seed is not None
    every = launch.gather(strategy, (local.cfg.resolved(), local.dataset.fingerprint))
    (config_0, data_0), problems = every[0], []
    for rank, (config, data) in enumerate(every[1:], start=1):
        changed = _differences(config_0, config, seed_given, free=())
        if changed:
            problems.append(f"MPI rank {rank}'s config differs from rank 0's at "
                            f"{', '.join(changed)}")
        elif data != data_0:
            problems.append(f"MPI rank {rank}'s data fingerprint differs from rank 0's")
    if problems:
        raise ConfigError(f"{problems[0]}; every rank must train the same config on the same "
                          f"data")


def _config(config, overrides):
    if isinstance(config, RunConfig):
        named = "device" in config.model_fields_set or _overrides_device(overrides)
        if overrides:
            config = parse_config(config.model_dump(mode="json"), "config", overrides)
        return _on_current_device(config, named), "config", os.getcwd()
    if isinstance(config, dict):
        cfg = parse_config(config, "config", overrides)
        return _on_current_device(cfg, "device" in cfg.model_fields_set), "config", os.getcwd()
    path = os.fspath(config)
    cfg = load_config(path, overrides)
    return (_on_current_device(cfg, "device" in cfg.model_fields_set), path,
            os.path.dirname(os.path.abspath(path)))


def _overrides_device(overrides):
    return any(text.partition("=")[0].strip() == "device" for text in overrides)


def _on_current_device(cfg, named):
    """A config that names no ``device`` runs on the caller's current device (``tf.device``,
    ``tf.config.set_default_device``): the CPU for the command line, the GPU for code that made
    it the default; the resolved config records which."""
    if named:
        return cfg
    current = "gpu" if context().device.upper().startswith("GPU") else "cpu"
    return cfg if cfg.device == current else cfg.model_copy(update={"device": current})


def check_device(device):
    """Refuse a GPU run with one message saying what is missing (CuPy, or a GPU)."""
    missing = backend.gpu_missing() if device == "gpu" else None
    if missing is not None:
        raise ConfigError(f"device gpu: {missing}")


def _refuse_existing_run(run_dir):
    """A new run goes into a new or empty directory: it never writes over files already there."""
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise UserError(f"--output {run_dir} is a file; give a directory for the run")
    if not _holds_nothing(run_dir):  # what a kill right after making it leaves is empty
        held = "a run; continue it with --resume, or" \
            if os.path.exists(os.path.join(run_dir, CONFIG_NAME)) else "files;"
        raise UserError(f"{run_dir} already holds {held} choose another --output (nothing "
                        f"was overwritten)")


def _resume_point(run_dir, cfg, where):
    """The checkpoint a resumed run goes on from; None (a new run) when ``run_dir`` does not
    exist yet or holds nothing: what a job killed before it wrote anything leaves."""
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise UserError(f"--output {run_dir} is a file; give a directory for the run")
    if _holds_nothing(run_dir):
        return None
    ckpt_io.clean_temporaries(os.path.join(run_dir, ckpt_io.CHECKPOINT_DIR))
    skipped = []
    found = ckpt_io.last_good_checkpoint(run_dir, skipped)
    if found is None:
        saved = os.path.join(run_dir, CONFIG_NAME)
        if not os.path.exists(saved):
            raise CheckpointError(f"--resume: {run_dir} holds no run (no {CONFIG_NAME} and no "
                                  f"checkpoint); start the run without --resume")
        # stopped before its first checkpoint: start again from its own config and seed
        found = _NoCheckpointYet(load_config(saved).model_dump(mode="json"))
    changed = _differences(found.config, cfg.resolved(), seed_given=cfg.training.seed is not None)
    if changed:
        raise ConfigError(f"{where}: differs from the config of the run in {run_dir} at "
                          f"{', '.join(changed)}; a resumed run keeps its config (only "
                          f"training.epochs and logging may change)")
    if found.training["finished"] and found.epoch >= cfg.training.epochs:
        raise UserError(f"--resume: the run in {run_dir} already finished ({found.epoch} "
                        f"epochs); to train longer, raise training.epochs "
                        f"(--set training.epochs={found.epoch + 10})")
    found.skipped = skipped  # said with where the run goes on from
    return found


def _holds_nothing(run_dir):
    """``run_dir`` is missing, or holds at most an empty checkpoints folder and temporaries."""
    if not os.path.isdir(run_dir):
        return True
    checkpoints = os.path.join(run_dir, ckpt_io.CHECKPOINT_DIR)
    for directory in (run_dir, checkpoints):
        if os.path.isdir(directory):
            ckpt_io.clean_temporaries(directory)
    held = set(os.listdir(run_dir))
    if os.path.isdir(checkpoints) and not os.listdir(checkpoints):
        held.discard(ckpt_io.CHECKPOINT_DIR)
    return not held


class _NoCheckpointYet:
    """A run that stopped before writing its first checkpoint: only its config."""
    epoch = 0
    path = None

    def __init__(self, config):
        self.config = config
        self.training = {"finished": False}


def _differences(saved, current, seed_given, prefix="", free=_RESUMABLE_CHANGES):
    """The key paths where two configs differ, but for those in ``free`` (and the seed when
    none was given)."""
    out = []
    for key in sorted(set(saved) | set(current)):
        path = f"{prefix}{key}"
        if path.startswith(free) or path == "training.seed" and not seed_given:
            continue
        a, b = saved.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, seed_given, path + ".", free)
        elif a != b:
            out.append(path)
    return out


def _write_text(path, text):
    write_text_atomically(path, text)


class _Trainer:
    """The run as ``Model.fit`` with ordinary callbacks: early stopping, the NaN watch, the
    history, the checkpoints (``RunCheckpoints``), the history's files (``RunHistoryWriter``),
    TensorBoard and the progress bar."""

    def __init__(self, model, cfg, resolved, dataset, base_dir, run_dir, verbose, stream,
                 strategy=None, stop=None):
        self.model, self.cfg, self.resolved = model, cfg, resolved
        self.strategy = strategy
        self.writes = strategy is None or strategy.rank == 0  # under MPI, rank 0 alone
        self.data, self.base_dir, self.run_dir = dataset, base_dir, run_dir
        self.verbose, self.stream = verbose, stream
        es = cfg.training.early_stopping
        self.early_stopping = None if es is None else callbacks_module.EarlyStopping(
            monitor=es.monitor, patience=es.patience, min_delta=es.min_delta, mode=es.mode,
            restore_best_weights=es.restore_best_weights)
        self.history = callbacks_module.History()
        # a GPU's loss is read once per _GPU_LOSS_EVERY steps: each read waits for the device
        self.watch = NanWatch(_GPU_LOSS_EVERY if cfg.device == "gpu" else 1)
        run_fields = {"config": resolved, "data_fingerprint": dataset.fingerprint,
                      "data_dir": base_dir, "feature_names": list(dataset.feature_names),
                      "target_names": list(dataset.target_names)}
        keep = [] if self.early_stopping is None else [self.early_stopping]
        self.checkpoints = RunCheckpoints(run_dir, cfg.checkpoint, cfg.training.epochs,
                                          cfg.best_monitor, run_fields, keep, self.history,
                                          self.watch, stop, strategy)
        self.history_writer = RunHistoryWriter(run_dir, self.history, self.watch,
                                               plot=cfg.logging.plot, writes=self.writes)
        self.mlflow = None  # the MLflow run (logging.mlflow), once open_logs opened it

    def restore(self, ckpt):
        self.checkpoints.restore(self.model, ckpt)

    def callbacks(self):
        """In this order: early stopping sets ``stop_training`` before the checkpoint records
        it; the watch and the history see the epoch before the checkpoint holds it; the
        history's files are written as training ends."""
        callbacks = [self.watch, self.history, self.checkpoints, self.history_writer]
        if self.early_stopping is not None:
            callbacks.insert(0, self.early_stopping)
        if self.mlflow is not None:
            callbacks.append(_MlflowEpochs(self.mlflow))
        if self.cfg.logging.tensorboard:
            try:
                callbacks.append(callbacks_module.TensorBoard(
                    os.path.join(self.run_dir, "tensorboard")))
            except ImportError as e:
                raise ConfigError(f"logging.tensorboard: {e}") from None
        progress = self.cfg.logging.progress
        if self.verbose and progress != "none":
            callbacks.append(_Progress(2 if progress == "lines" else 1, self.stream,
                                       force_bar=progress == "bar"))
        return callbacks

    def fit(self):
        cfg = self.cfg.training
        if self.checkpoints.finished:  # killed after its last checkpoint: nothing to train
            self.history_writer.write()
            return
        batch_size = n_rows(self.data.x_train) if cfg.batch_size == "full" else cfg.batch_size
        validation = None if self.data.x_valid is None else (self.data.x_valid, self.data.y_valid)
        # A loss that turns NaN stops the run with one message naming the epoch and step:
        # numpy's overflow warnings on the way there would only bury it.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            self.model.fit(self.data.x_train, self.data.y_train, batch_size=batch_size,
                           epochs=cfg.epochs, initial_epoch=self.checkpoints.epoch,
                           shuffle=cfg.shuffle, validation_data=validation,
                           validation_freq=cfg.validation.every, callbacks=self.callbacks(),
                           verbose=0)
        launch.together(self.strategy, UserError, self.check_loss)

    def check_loss(self):
        """The run's end when its loss turned NaN (the same on every rank: the logs are the
        global batches')."""
        at = self.watch.nan_at
        if at is not None:
            last = ckpt_io.epoch_checkpoints(self.run_dir)
            kept = f"the last good checkpoint is {last[0][1]}" if last else \
                "no checkpoint was written before it"
            step = f"step {at['batch'] + 1}" if self.watch.exact else f"by step {at['batch'] + 1}"
            raise TrainingError(f"the loss became {at['loss']} at epoch {at['epoch'] + 1}, "
                                f"{step}; training stopped ({kept}). Lower the learning rate, "
                                f"or check the data for extreme values.")

    # --- what the run leaves ---------------------------------------------------------------------
    def open_logs(self):
        """The MLflow run (``logging.mlflow``), started or gone on in; rank 0 alone logs."""
        settings = self.cfg.logging.mlflow
        if settings is not None and self.writes:
            self.mlflow = MlflowLog.open(settings, self.run_dir, self.resolved,
                                         self.history.history)

    def close_logs(self, error):
        """The MLflow run ended as KILLED or FAILED by ``error``, which is what is reported:
        a store that cannot be reached now too does not hide it."""
        if self.mlflow is not None:
            try:
                self.mlflow.end(error)
            except Exception:  # noqa: BLE001 (the run's own error is raised on)
                pass

    def finish(self):
        history = self.history.history
        es = self.early_stopping  # its on_train_end did this, unless fit had nothing to run
        if es is not None and es.restore_best_weights and es.best_weights is not None:
            self.model.set_weights(es.best_weights)
        if self.writes:
            self.checkpoints.write(os.path.join(self.run_dir, ckpt_io.FINAL_NAME), finished=True)
        # every rank: under MPI, evaluate is a collective over the ranks' shards
        test = self.model.evaluate(self.data.x_test, self.data.y_test, verbose=0, return_dict=True)
        if self.writes:  # under MPI, rank 0 alone writes
            _write_text(os.path.join(self.run_dir, "test_metrics.json"),
                        json.dumps(test, indent=2) + "\n")
            if self.mlflow is not None:
                self.mlflow.finish()  # the run directory as it ends, as artifacts
        test = launch.broadcast(self.strategy, test)
        if self.verbose:
            shown = " - ".join(f"{k}: {v:.4f}" for k, v in test.items())
            print(f"test: {shown}", file=self.stream)
            print(f"run directory: {self.run_dir}", file=self.stream)
        return Run(self.model, history, test, self.run_dir, self.resolved)


# On a GPU, reading the loss waits for the device: the NaN watch reads it once per this many
# steps there (the progress bar's interval), and at every step on the CPU, where it is free.
_GPU_LOSS_EVERY = 20


class _MlflowEpochs(callbacks_module.Callback):
    """Each epoch's logs (history.json's numbers) to the MLflow run, its step the epoch from 1."""

    def __init__(self, mlflow_log):
        super().__init__()
        self.mlflow_log = mlflow_log

    def on_epoch_end(self, epoch, logs=None):
        self.mlflow_log.log_epoch(epoch + 1, logs or {})


class _Progress(callbacks_module.ProgbarLogger):
    def __init__(self, verbose, stream, force_bar=False):
        super().__init__(verbose, stream)
        self.force_bar = force_bar

    def _interactive(self):
        return self.force_bar or super()._interactive()
