"""``logging: {tensorboard: true}`` in a run's config: TensorBoard's event files beside the run."""
import os

import numpy as np
import pytest

from tapeflow.training.run_config import parse_config
from tapeflow.training.run import train

from .helpers import small_config

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator)


def test_run_writes_event_files_with_its_history(tmp_path):
    config = small_config(training={"epochs": 2, "batch_size": 2048},
                          logging={"tensorboard": True})
    run = train(config, output=tmp_path / "run", verbose=False)
    events = EventAccumulator(os.fspath(tmp_path / "run" / "tensorboard" / "train"))
    events.Reload()
    np.testing.assert_allclose([e.value for e in events.Scalars("epoch_loss")],
                               run.history["loss"], rtol=1e-6)
    assert "epoch_mae" in events.Tags()["scalars"]



def test_off_by_default():
    assert parse_config(small_config()).logging.tensorboard is False
