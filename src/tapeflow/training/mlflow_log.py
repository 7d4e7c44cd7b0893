"""``logging: {mlflow: true}``: a run's config, per-epoch metrics and run directory, in MLflow.

What is logged: the resolved config flattened to key paths as params (``training.batch_size``,
``model.layers.0.Dense.units``), each epoch's numbers, the very ones history.json holds, as
metrics at step = the epoch (1 for the first, as history.csv counts), and when the run ends the
run directory's files as artifacts. MLflow is imported only here, and only when a run asks for
it (the ``[mlflow]`` extra: ``mlflow-skinny``, the tracking client without the UI server).

Where: ``logging.mlflow.tracking_uri``, else ``MLFLOW_TRACKING_URI``, else a store in the run
directory, ``mlflow/``: an SQLite database with the artifacts beside it. Not a ``file:`` store:
MLflow 3 keeps that backend in maintenance mode and refuses to open one (a reader's ``mlflow
ui`` too) unless ``MLFLOW_ALLOW_FILE_STORE`` is set; SQLite is MLflow's own default now. Read it
with ``mlflow ui --backend-store-uri sqlite:///RUN_DIR/mlflow/mlflow.db``.

Resume: ``mlflow_run.json`` in the run directory names the store and the run, and a resumed run
goes on in that run. It logs only the epochs MLflow lacks: a run killed between an epoch's
metrics and its checkpoint trains that epoch again, to the same numbers, and logs it once.
"""
import importlib.util
import json
import os
import time

from ..saving.atomic import write_text_atomically
from .errors import CheckpointError, ConfigError, Preempted

__all__ = ["check_installed", "MlflowLog", "flatten_config", "RECORD_NAME", "STORE_DIR"]

RECORD_NAME = "mlflow_run.json"  # the store and run a resumed run goes on in
STORE_DIR = "mlflow"  # the default store, under the run directory (never logged as an artifact)
DEFAULT_EXPERIMENT = "tapeflow"
_INSTALL = "pip install 'tapeflow[mlflow]'"
_MAX_PARAM_LENGTH = 6000  # MLflow's limit on a param's value (MAX_PARAM_VAL_LENGTH)
_MAX_PARAMS_PER_CALL = 100  # and on the params of one log_batch
_MAX_METRICS_PER_CALL = 1000  # and on its metrics


def check_installed(settings):
    """Refuse, before any work, a run that asks for MLflow where it cannot log: MLflow not
    installed, or an SQLite store without SQLAlchemy and Alembic. Nothing is imported."""
    needed = ["mlflow"]
    uri = _given_uri(settings)
    if uri is None or uri.startswith("sqlite:"):
        needed += ["sqlalchemy", "alembic"]  # MLflow's database stores
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        names = " and ".join([", ".join(missing[:-1]), missing[-1]] if missing[1:] else missing)
        are = "are" if missing[1:] else "is"
        raise ConfigError(f"logging.mlflow: {names} {are} not installed; {_INSTALL} (or turn "
                          f"logging.mlflow off)")


def flatten_config(config, prefix=""):
    """{key path: value as text} of a resolved config: mappings and lists of mappings are
    followed down, other values written as in JSON (``true``, ``null``, ``[64, 64]``)."""
    out = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, list) and any(isinstance(item, dict) for item in value):
            value = {str(i): item for i, item in enumerate(value)}
        if isinstance(value, dict) and value:
            out.update(flatten_config(value, path + "."))
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        if len(text) > _MAX_PARAM_LENGTH:  # config.yaml, an artifact, holds it whole
            text = text[:_MAX_PARAM_LENGTH - 3] + "..."
        out[path] = text
    return out


class MlflowLog:
    """The MLflow run of one tapeflow run: ``open`` it, ``log_epoch`` after each epoch,
    ``finish`` (or ``end`` with an error) at the end."""

    def __init__(self, client, run_id, run_dir, in_run_dir):
        self.client, self.run_id, self.run_dir = client, run_id, run_dir
        self.in_run_dir = in_run_dir  # the store is the default one, mlflow/ in the run directory
        self.logged = {}  # metric name -> the last step MLflow holds
        self.ended = False

    @classmethod
    def open(cls, settings, run_dir, resolved, history):
        """Start the run's MLflow run, or go on in the one ``mlflow_run.json`` names; log the
        config, and the epochs of ``history`` (a resumed run's) that MLflow lacks."""
        from mlflow.exceptions import MlflowException
        record_path = os.path.join(run_dir, RECORD_NAME)
        record = _read_record(record_path)
        uri = record["tracking_uri"] if record else \
            _given_uri(settings) or _default_uri(run_dir)
        try:
            if record:
                log = cls._go_on(record["run_id"], run_dir, uri)
            else:
                log = cls._start(settings, run_dir, uri)
                write_text_atomically(record_path, json.dumps(
                    {"tracking_uri": uri, "run_id": log.run_id}, indent=1) + "\n")
            log.log_params(flatten_config(resolved))
            log.log_history(history, resolved["training"]["validation"]["every"])
        except MlflowException as e:
            raise ConfigError(f"logging.mlflow: the MLflow store {uri}: {e.message}") from None
        return log

    @classmethod
    def _start(cls, settings, run_dir, uri):
        from mlflow.tracking import MlflowClient
        default_store = uri == _default_uri(run_dir)
        if default_store:
            os.makedirs(os.path.join(run_dir, STORE_DIR), exist_ok=True)
        client = MlflowClient(uri)
        name = settings.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") \
            or DEFAULT_EXPERIMENT
        experiment = client.get_experiment_by_name(name)
        if experiment is not None:
            experiment_id = experiment.experiment_id
        else:  # in the default store, artifacts go beside its database, not into the cwd
            location = _file_uri(os.path.join(run_dir, STORE_DIR, "artifacts")) \
                if default_store else None
            experiment_id = client.create_experiment(name, artifact_location=location)
        run = client.create_run(experiment_id, run_name=os.path.basename(run_dir),
                                tags={"tapeflow.run_dir": run_dir})
        return cls(client, run.info.run_id, run_dir, default_store)

    @classmethod
    def _go_on(cls, run_id, run_dir, uri):
        from mlflow.tracking import MlflowClient
        client = MlflowClient(uri)
        run = client.get_run(run_id)  # an MlflowException naming the run if the store lacks it
        client.update_run(run_id, status="RUNNING")
        log = cls(client, run_id, run_dir, uri == _default_uri(run_dir))
        for name in run.data.metrics:
            steps = [m.step for m in client.get_metric_history(run_id, name)]
            log.logged[name] = max(steps, default=0)
        return log

    def log_params(self, params):
        """Params MLflow lacks. One it holds with another value (what a resume may change:
        training.epochs, logging, device) stays, since MLflow's params never change; the new
        value is the tag ``resumed.<key>``."""
        from mlflow.entities import Param
        held = self.client.get_run(self.run_id).data.params
        new = [Param(k, v) for k, v in params.items() if k not in held]
        for start in range(0, len(new), _MAX_PARAMS_PER_CALL):
            self.client.log_batch(self.run_id, params=new[start:start + _MAX_PARAMS_PER_CALL])
        for key, value in params.items():
            if key in held and held[key] != value:
                self.client.set_tag(self.run_id, f"resumed.{key}", value)

    def log_history(self, history, validation_every):
        """The epochs of a resumed run's history that MLflow lacks (a run that turns MLflow
        on when resumed): validation numbers are every ``validation_every``-th epoch's."""
        points = []
        for name, values in history.items():
            every = validation_every if name.startswith("val_") else 1
            points += [(name, value, (i + 1) * every) for i, value in enumerate(values)]
        self._log_metrics(points)

    def log_epoch(self, epoch, logs):
        """``logs`` (an epoch's numbers, as history.json gets them) at step ``epoch``."""
        self._log_metrics([(name, value, epoch) for name, value in logs.items()])

    def _log_metrics(self, points):
        """(name, value, step) points, but those at steps MLflow holds already."""
        from mlflow.entities import Metric
        now = int(time.time() * 1000)
        metrics = [Metric(name, float(value), now, step) for name, value, step in points
                   if step > self.logged.get(name, 0)]
        for start in range(0, len(metrics), _MAX_METRICS_PER_CALL):
            self.client.log_batch(self.run_id, metrics=metrics[start:start + _MAX_METRICS_PER_CALL])
        for metric in metrics:
            self.logged[metric.key] = max(metric.step, self.logged.get(metric.key, 0))

    def finish(self):
        """The run directory (less the default store) as artifacts; the MLflow run FINISHED."""
        for entry in sorted(os.listdir(self.run_dir)):
            path = os.path.join(self.run_dir, entry)
            if self.in_run_dir and entry == STORE_DIR:
                continue
            if os.path.isdir(path):
                self.client.log_artifacts(self.run_id, path, artifact_path=entry)
            else:
                self.client.log_artifact(self.run_id, path)
        self.end(None)

    def end(self, error):
        """Close the MLflow run: FINISHED, KILLED (a SIGTERM, ^C) or FAILED by ``error``."""
        if self.ended:
            return
        self.ended = True
        status = "FINISHED" if error is None else \
            "KILLED" if isinstance(error, (Preempted, KeyboardInterrupt)) else "FAILED"
        self.client.set_terminated(self.run_id, status)


def _given_uri(settings):
    """The store the config or the environment names; None: the default store."""
    return settings.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or None


def _default_uri(run_dir):
    return "sqlite:///" + os.path.join(os.path.abspath(run_dir), STORE_DIR, "mlflow.db")


def _file_uri(path):
    return "file://" + os.path.abspath(path)


def _read_record(path):
    """``mlflow_run.json``'s store and run, or None when the run has not logged to MLflow."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        if not (isinstance(record, dict) and isinstance(record.get("tracking_uri"), str)
                and isinstance(record.get("run_id"), str)):
            raise ValueError("it names no tracking_uri and run_id")
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable record of the run's MLflow run ({e}); "
                              f"remove it to log the resumed run as a new MLflow run") from None
    return record
