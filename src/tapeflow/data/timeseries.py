"""``keras.utils.timeseries_dataset_from_array``: sliding windows over a series as a dataset of
(batches of) sequences, with Keras's arguments, checks and order (start positions shuffled once
by ``seed``, then shuffled again within a buffer each epoch)."""
import numpy as np

from ..core.context import context
from ..tracing.function import TensorSpec
from .dataset import Dataset
from .elements import spec_dtype

__all__ = ["timeseries_dataset_from_array"]


def _check(data, start_index, end_index, sampling_rate, sequence_stride):
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"`start_index` must be 0 or greater. Received: "
                             f"start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"`start_index` must be lower than the length of the data. "
                             f"Received: start_index={start_index}, for data of length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: "
                             f"start_index={start_index}, and end_index={end_index}")
        if end_index >= n:
            raise ValueError(f"`end_index` must be lower than the length of the data. "
                             f"Received: end_index={end_index}, for data of length {n}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: end_index={end_index}")
    for name, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if value <= 0:
            raise ValueError(f"`{name}` must be higher than 0. Received: {name}={value}")
        if value >= n:
            raise ValueError(f"`{name}` must be lower than the length of the data. Received: "
                             f"{name}={value}, for data of length {n}")


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Windows ``data[i : i + sequence_length * sampling_rate : sampling_rate]`` for start
    positions i every ``sequence_stride`` steps (within ``[start_index, end_index)``), each with
    ``targets[i]`` where targets are given; batched by ``batch_size`` (None: unbatched)."""
    data = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
    _check(data, start_index, end_index, sampling_rate, sequence_stride)
    start = start_index or 0
    end = len(data) if end_index is None else end_index
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets.numpy() if hasattr(targets, "numpy") else targets)
        num_seqs = min(num_seqs, len(targets))
    positions = np.arange(0, max(num_seqs, 0), sequence_stride)
    if shuffle:
        if seed is None:
            seed = int(context().random.rng.integers(10 ** 6))
        np.random.RandomState(seed).shuffle(positions)
    steps = data[start:end]
    target_steps = None if targets is None else targets[start:]
    offsets = np.arange(sequence_length) * sampling_rate

    def make():
        for position in positions:
            window = steps[position + offsets]
            yield window if target_steps is None else (window, target_steps[position])
    window_spec = TensorSpec((sequence_length,) + data.shape[1:], spec_dtype(data))
    spec = window_spec if targets is None else (
        window_spec, TensorSpec(targets.shape[1:], spec_dtype(targets)))
    dataset = Dataset(make, spec, len(positions))
    if batch_size is not None:
        if shuffle:
            dataset = dataset.shuffle(buffer_size=batch_size * 8, seed=seed)
        return dataset.batch(batch_size)
    return dataset.shuffle(buffer_size=1024, seed=seed) if shuffle else dataset
