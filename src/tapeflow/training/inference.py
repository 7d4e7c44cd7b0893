"""What the command line does with a finished checkpoint: evaluate, predict, inspect.

The model is loaded with ``tf.keras.models.load_model`` (a checkpoint is a
Keras save): rebuilt from its config when tapeflow knows every class in it,
else the saved graph, which predicts and differentiates through its saved
custom gradients without the code that defined them.  Nothing from the file
is imported or run.
"""
import csv
import io
import os
import warnings

import numpy as np

from ..saving.atomic import write_text_atomically
from ..saving.keras_saving import load_model
from .build import loss_from_config, metrics_from_config, named_compile_arguments
from .checkpoint import run_directory_holding
from .checkpoint_state import state_of
from .run_config import RunConfig, dump_yaml
from .data_sources import csv_columns, load_data, read_csv_rows
from .errors import CheckpointError, DataError, UserError
from .named_sources import input_array, read_named_arrays

__all__ = ["load_checkpoint_model", "evaluate_checkpoint", "predict_csv", "describe_checkpoint"]


def load_checkpoint_model(ckpt):
    try:
        return load_model(ckpt.path, compile=False)
    except ValueError as e:
        raise CheckpointError(f"{ckpt.path}: cannot load its model: {e}") from None


def run_config(ckpt):
    try:
        return RunConfig.model_validate(ckpt.config)
    except ValueError as e:
        raise CheckpointError(f"{ckpt.path}: its run config is not valid: {e}") from None


def evaluate_checkpoint(ckpt, split="test"):
    """``{loss, metric...}`` of the checkpoint's model on its run's ``split`` of the data."""
    cfg = run_config(ckpt)
    dataset = load_data(cfg.data, ckpt.training.get("data_dir", "."))
    if list(dataset.feature_names) != ckpt.training.get("feature_names"):
        raise DataError(f"the run's data now have the features {list(dataset.feature_names)}, "
                        f"but the model was trained on {ckpt.training.get('feature_names')}")
    if dataset.fingerprint != ckpt.training.get("data_fingerprint"):
        warnings.warn(f"the run's data changed since {ckpt.path} was written (their "
                      f"fingerprints differ): the metrics are on the data as they are now",
                      stacklevel=2)
    x, y = {"test": (dataset.x_test, dataset.y_test), "train": (dataset.x_train, dataset.y_train),
            "valid": (dataset.x_valid, dataset.y_valid)}[split]
    if x is None:
        raise DataError(f"the run's data have no {split} split (data.split.valid_size is 0)")
    model = load_checkpoint_model(ckpt)
    where = os.path.basename(ckpt.path)
    if isinstance(x, dict):  # named inputs and outputs: compile's per-output losses, by name
        model.compile(**named_compile_arguments(cfg, dataset, None, where))
        return {k: float(v) for k, v in model.evaluate(x, y, batch_size=1024, verbose=0,
                                                       return_dict=True).items()}
    y_pred = model.predict(x, batch_size=1024)
    results = {"loss": float(np.mean(loss_from_config(cfg.loss, where)(y, y_pred).numpy()))}
    for metric in metrics_from_config(cfg.metrics, where, y):
        metric.update_state(y, y_pred)
        results[metric.name] = float(metric.result().numpy())
    return results


def read_features(path, feature_names):
    """The feature columns of a CSV file with a header row, in the model's order (columns are
    found by name; others are ignored)."""
    name = os.fspath(path)
    header, rows, row_numbers = read_csv_rows(path, name)
    missing = [n for n in feature_names if n not in header]
    if missing:
        raise DataError(f"{name}: the model takes {len(feature_names)} features "
                        f"({', '.join(feature_names)}); the header lacks {', '.join(missing)}")
    return csv_columns(name, header, rows, row_numbers, list(feature_names), "float32")


# the data sources whose examples are not a CSV file's numeric columns, and what they are
_NOT_COLUMNS = {"image_directory": "images (height, width, channels)"}


def predict_csv(ckpt, input_path, output_path, overwrite=False):
    """Predict for every row of ``input_path``; write a CSV of the targets, in raw units (an
    existing ``output_path`` is replaced only when ``overwrite``)."""
    names = ckpt.training.get("feature_names")
    targets = ckpt.training.get("target_names")
    if not isinstance(names, list) or not isinstance(targets, list):
        raise CheckpointError(f"{ckpt.path}: the checkpoint does not name its feature columns")
    source = (ckpt.config.get("data") or {}).get("source") if isinstance(ckpt.config, dict) \
        else None
    if source in _NOT_COLUMNS:
        raise UserError(f"{ckpt.path}: its model takes {_NOT_COLUMNS[source]}, not a CSV file's "
                        f"numeric columns; load it with tf.keras.models.load_model and call "
                        f"predict on such arrays")
    output_path = os.fspath(output_path)
    check_output(output_path, {"the --input file": input_path, "the checkpoint": ckpt.path},
                 overwrite)
    named = (ckpt.config.get("data") or {}).get("inputs") if isinstance(ckpt.config, dict) \
        else None
    if isinstance(named, dict):  # several named inputs and outputs
        return _predict_named(ckpt, named, input_path, output_path)
    text = source == "text_csv"  # raw texts, made token ids with the run's vocabulary
    x = _texts_as_ids(ckpt, input_path) if text else \
        read_features(input_path, names).astype(np.float32)
    model = load_checkpoint_model(ckpt)
    if not text:
        width = model.input_shape[-1]
        if len(names) != width:  # a damaged or crafted checkpoint: numpy would broadcast
            raise CheckpointError(f"{ckpt.path}: names {len(names)} feature columns, but its "
                                  f"model takes {width}")
    y = np.asarray(model.predict(x, batch_size=1024))
    y = y.reshape(len(x), -1)
    header = targets if len(targets) == y.shape[1] else [f"output_{i}" for i in range(y.shape[1])]
    write_csv(output_path, header, [[repr(float(v)) for v in row] for row in y])
    return y


def _texts_as_ids(ckpt, input_path):
    """The texts of a CSV file's text column (the run's ``data.text``) as the token ids of the
    run's vocabulary (``vocabulary.txt`` in its run directory)."""
    data = run_config(ckpt).data
    name = os.fspath(input_path)
    header, rows, _ = read_csv_rows(input_path, name, data.delimiter)
    if data.text not in header:
        raise DataError(f"{name}: the model takes texts from a column {data.text!r} (the "
                        f"run's data.text); the header has {', '.join(header)}")
    run_dir = run_directory_holding(ckpt.path) or os.path.dirname(ckpt.path)
    return data.vectorizer(run_dir)([row[header.index(data.text)] for row in rows])


def _predict_named(ckpt, inputs, input_path, output_path):
    """Predict for a model of named inputs from an npz file holding the arrays the run's
    ``data.inputs`` names (its array keys, or for a csv run its columns); write a CSV of every
    output's columns (``<output>`` or ``<output>_<j>``)."""
    name = os.fspath(input_path)
    source = ckpt.config["data"].get("source")
    if source == "csv":
        header, rows, numbers = read_csv_rows(input_path, name)
        x = {}
        for part, columns in inputs.items():
            missing = [c for c in columns if c not in header]
            if missing:
                raise DataError(f"{name}: the model's input {part!r} takes the columns "
                                f"{', '.join(columns)}; the header lacks {', '.join(missing)}")
            x[part] = csv_columns(name, header, rows, numbers, columns, "float32")
    else:
        arrays = read_named_arrays(input_path, name, list(inputs.values()))
        x = {part: input_array(arrays[key], "float32") for part, key in inputs.items()}
    if len({len(a) for a in x.values()}) > 1:
        raise DataError(f"{name}: the inputs' arrays have different numbers of rows")
    model = load_checkpoint_model(ckpt)
    outputs = model.predict(x, batch_size=1024, verbose=0)
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    header, columns = [], []
    for output, y in zip(model.output_names, outputs):
        y = np.asarray(y).reshape(len(y), -1)
        header += [output] if y.shape[1] == 1 else [f"{output}_{j}" for j in range(y.shape[1])]
        columns.append(y)
    y = np.hstack(columns)
    write_csv(output_path, header, [[repr(float(v)) for v in row] for row in y])
    return y


def check_output(path, keep, overwrite=False):
    """Refuse an output path that is a directory, lies in no directory, is one of the files in
    ``keep`` ({what: path}), lies in a run directory, or exists (unless ``overwrite``): nothing
    the user has is overwritten by mistake."""
    if os.path.isdir(path):
        raise UserError(f"--output {path} is a directory; give a file name, e.g. "
                        f"{os.path.join(path, 'predictions.csv')}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UserError(f"--output {path}: the directory {parent} does not exist")
    for what, other in keep.items():
        try:
            same = os.path.samefile(path, other)
        except OSError:  # one of them does not exist
            same = False
        if same:
            raise UserError(f"--output {path} is {what}; write the predictions to another file "
                            f"(nothing was overwritten)")
    run_dir = run_directory_holding(path)
    if run_dir is not None:
        raise UserError(f"--output {path} lies in the run directory {run_dir}, whose files the "
                        f"trainer owns; write the predictions elsewhere")
    if os.path.lexists(path) and not overwrite:
        raise UserError(f"--output {path} exists; pass --overwrite to replace it")


def write_csv(path, header, rows):
    """Write a CSV file atomically: a new temporary file beside it, then a rename."""
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(header)
    writer.writerows(rows)
    try:
        write_text_atomically(path, table.getvalue(), newline="")
    except OSError as e:
        raise UserError(f"--output {path}: cannot write it ({e})") from None


def describe_checkpoint(ckpt):
    """The lines ``tapeflow inspect`` prints."""
    training = ckpt.training
    cfg = training["config"]
    doc = ckpt.document
    lines = [f"checkpoint: {ckpt.path}",
             f"epoch: {ckpt.epoch} of {cfg['training']['epochs']}"
             + (" (finished)" if training["finished"] else "")
             + (" (stopped early)" if training["stopped"] else ""),
             f"seed: {cfg['training']['seed']}"]
    trainable = sum(int(np.prod(v.shape)) for v in ckpt.variables[:ckpt.n_tracked] if v.trainable)
    total = sum(int(np.prod(v.shape)) for v in ckpt.variables[:ckpt.n_tracked])
    lines.append(f"parameters: {total:,} ({trainable:,} trainable)")
    lines.append("architecture:")
    for v in ckpt.variables[:ckpt.n_tracked]:
        flag = "" if v.trainable else "  (non-trainable)"
        lines.append(f"  {v.path:40s} {str(tuple(v.shape)):12s} {v.dtype}{flag}")
    opt = (doc.get("optimizer") or {}).get("config") or {}
    opt_cfg = opt.get("config", {}) if isinstance(opt, dict) else {}
    lr = opt_cfg.get("learning_rate")
    iterations = ckpt.optimizer_state.get("iteration")
    lines.append(f"optimizer: {opt.get('class_name', '?')} (learning_rate {_short(lr)}"
                 + (f", {int(iterations)} steps" if iterations is not None else "") + ")")
    gradients = custom_gradient_names(doc)
    lines.append("custom gradients: " + (", ".join(gradients) if gradients else "none"))
    history = training["history"]
    if history:
        last = {k: v[-1] for k, v in history.items() if v}
        lines.append("last epoch: " + " - ".join(f"{k}: {v:.4f}" for k, v in last.items()))
    best = state_of(training["callbacks"], "RunCheckpoints")
    if best and best.get("best") is not None:
        lines.append(f"best {cfg['checkpoint']['monitor']}: {best['best']:.4f} "
                     f"(epoch {best['best_epoch'] + 1})")
    lines.append("config:")
    lines += ["  " + line for line in dump_yaml(cfg).splitlines()]
    return lines


def custom_gradient_names(document):
    """Names of the custom-gradient functions in the saved call graph."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            if value.get("op") == "IdentityN" and isinstance(value.get("attrs"), dict):
                grad = value["attrs"].get("grad")
                graph = grad.get("$graph") if isinstance(grad, dict) else None
                name = graph.get("name") if isinstance(graph, dict) else None
                found.append(name if isinstance(name, str) else "custom_gradient")
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(document.get("functions"))
    return sorted(set(found))


def _short(value):
    return f"{value:g}" if isinstance(value, float) else str(value)
