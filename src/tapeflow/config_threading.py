"""``tf.config.threading``: how many threads an op may use (intra-op) and how many ops may run
at once (inter-op), under TensorFlow's names.

tapeflow's threaded kernels are BLAS's: the intra-op count is the BLAS libraries' thread count
(OpenBLAS, MKL, BLIS; set through threadpoolctl, scikit-learn's dependency), so
``set_intra_op_parallelism_threads(1)`` gives one-core, run-to-run steady products as it does
in TensorFlow.  0, the default, gives back the count BLAS started with
(``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, else a thread a core).  Each call sets every
BLAS library loaded by then; one loaded later (scipy's own, say) keeps its start-up count until
the next call.

tapeflow runs a graph's equations one after another on the calling thread, so the inter-op
count changes nothing; it is kept, and read back, for programs that set it.

TensorFlow refuses a new value once its runtime has started (RuntimeError); tapeflow applies
one at any time, so every program TensorFlow accepts runs the same here.
"""
__all__ = ["get_intra_op_parallelism_threads", "set_intra_op_parallelism_threads",
           "get_inter_op_parallelism_threads", "set_inter_op_parallelism_threads"]

_SET = {"intra": 0, "inter": 0}
_STARTED = {}  # a BLAS library's path -> its thread count before tapeflow first set it


def get_intra_op_parallelism_threads():
    """The threads an op may use, as set; 0: the system's choice (BLAS's start-up count)."""
    return _SET["intra"]


def set_intra_op_parallelism_threads(num_threads):
    """Let an op use ``num_threads`` threads (BLAS's products); 0 gives back the count BLAS
    started with."""
    num_threads = _checked("set_intra_op_parallelism_threads", num_threads)
    for controller in _blas_controllers():
        started = _STARTED.setdefault(controller.filepath, controller.get_num_threads())
        controller.set_num_threads(num_threads or started)
    _SET["intra"] = num_threads


def get_inter_op_parallelism_threads():
    """The ops that may run at once, as set; 0: the system's choice."""
    return _SET["inter"]


def set_inter_op_parallelism_threads(num_threads):
    """Kept and read back; tapeflow runs one op at a time on the calling thread."""
    _SET["inter"] = _checked("set_inter_op_parallelism_threads", num_threads)


def _checked(name, num_threads):
    if isinstance(num_threads, bool) or not hasattr(num_threads, "__index__") \
            or num_threads.__index__() < 0:
        raise ValueError(f"tf.config.threading.{name}: num_threads must be a non-negative "
                         f"integer (0: the system's choice), got {num_threads!r}")
    return num_threads.__index__()


def _blas_controllers():
    """threadpoolctl's handles on the BLAS libraries loaded now (8 ms: looked up at each call,
    so a library loaded since the last one is set too)."""
    from threadpoolctl import ThreadpoolController
    return [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
