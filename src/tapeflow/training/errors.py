"""The trainer's user errors: a mistake in a config, a data file or a checkpoint.

Each is one message that names the file and, where there is one, the key path
(``housing.yaml: training.epochs: ...``).  The command line prints the message
and exits with status 2, without a traceback; anything else is a bug and keeps
its traceback.
"""

__all__ = ["UserError", "ConfigError", "DataError", "CheckpointError", "TrainingError",
           "Preempted"]


class UserError(Exception):
    """A mistake in what the user gave us; ``str(error)`` is the whole message."""


class ConfigError(UserError, ValueError):
    """The config file, or a ``--set`` override, is not a valid run config."""


class DataError(UserError, ValueError):
    """The data named by the config cannot be used: missing, unreadable, non-numeric, NaN."""


class CheckpointError(UserError, ValueError):
    """A checkpoint is missing, damaged, or does not fit the model it is loaded into."""


class TrainingError(UserError, RuntimeError):
    """Training cannot go on (a loss that turned NaN); the last good checkpoint is kept."""


class Preempted(Exception):
    """Not a mistake: the run was asked to stop (SIGTERM) and stopped after writing the
    checkpoint ``path``; the same command with ``--resume`` goes on from it."""

    def __init__(self, message, path):
        super().__init__(message)
        self.path = path
