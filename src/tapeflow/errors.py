"""TensorFlow's ``tf.errors``: the exceptions an op raises when it runs.

An ``OpError`` carries TensorFlow's ``message``, ``op`` and ``node_def`` (None here:
tapeflow has no NodeDef) and an ``error_code`` (gRPC's status codes, as TensorFlow's).
``tf.debugging`` assertions raise ``InvalidArgumentError``, eagerly or when a traced
graph runs; a ``TensorArray`` read past its end raises ``InvalidArgumentError`` too.
"""

__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
    "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "ResourceExhaustedError",
    "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError",
    "InternalError", "UnavailableError", "DataLossError", "UnauthenticatedError",
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
]

OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS = range(7)
PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE = range(7, 12)
UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = range(12, 17)


class OpError(Exception):
    """An op failed when it ran: TensorFlow's base of the errors below."""

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __reduce__(self):  # picklable with its message (subclasses take node_def, op, message)
        return type(self), (self._node_def, self._op, self._message)

    def __str__(self):
        return self._message


def _error(name, code, doc):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)
    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc,
                                   "__module__": __name__})


CancelledError = _error("CancelledError", CANCELLED, "An operation was cancelled.")
UnknownError = _error("UnknownError", UNKNOWN, "An unknown error.")
InvalidArgumentError = _error("InvalidArgumentError", INVALID_ARGUMENT,
                              "An op got an invalid argument (a failed assertion).")
DeadlineExceededError = _error("DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline expired.")
NotFoundError = _error("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _error("AlreadyExistsError", ALREADY_EXISTS, "The entity already exists.")
PermissionDeniedError = _error("PermissionDeniedError", PERMISSION_DENIED,
                               "The caller may not run the operation.")
ResourceExhaustedError = _error("ResourceExhaustedError", RESOURCE_EXHAUSTED,
                                "A resource (memory) is exhausted.")
FailedPreconditionError = _error("FailedPreconditionError", FAILED_PRECONDITION,
                                 "The system is not in a state to run the operation.")
AbortedError = _error("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _error("OutOfRangeError", OUT_OF_RANGE,
                         "An operation went past the valid range (the end of a dataset).")
UnimplementedError = _error("UnimplementedError", UNIMPLEMENTED,
                            "The operation is not implemented.")
InternalError = _error("InternalError", INTERNAL, "An internal invariant broke.")
UnavailableError = _error("UnavailableError", UNAVAILABLE, "The runtime is unavailable.")
DataLossError = _error("DataLossError", DATA_LOSS, "Unrecoverable data loss.")
UnauthenticatedError = _error("UnauthenticatedError", UNAUTHENTICATED,
                              "The request has no valid credentials.")
