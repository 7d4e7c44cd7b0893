"""Summing device (CuPy) buffers over the ranks with NCCL rather than through the host.

Where the gradients live on a GPU, MPI on host buffers costs a copy to the host and back each
step; NCCL sums them GPU to GPU (over NVLink, or InfiniBand with GPUDirect).  A NCCL
communicator is made from a unique id that one rank draws: rank 0 draws it
(``nccl.get_unique_id()``) and MPI broadcasts it.  ``NcclSum`` has the host path's interface
(``sum_in_place``, as ``mpi.Communicator``); ``MPIStrategy`` picks one or the other by the array
module of the buffer (``backend.array_module``).  Each rank must use its own GPU (``tf.device``
per local rank) before the first device all-reduce.  Not run on a GPU yet: the tests check the
selection and the id's broadcast with a stand-in ``nccl`` module.
"""

__all__ = ["NcclSum", "import_nccl"]


def import_nccl():
    """CuPy's ``cupy.cuda.nccl``, or an ImportError saying how to get it."""
    try:
        from cupy.cuda import nccl
    except ImportError as error:
        raise ImportError("MPIStrategy: gradients on a GPU are summed with NCCL, which needs CuPy "
                          "with its NCCL bindings: pip install 'tapeflow[gpu]' (CuPy's wheels "
                          "bring NCCL)") from error
    return nccl


class NcclSum:
    """One NCCL communicator over the ranks of ``comm`` (an ``mpi.Communicator``)."""

    def __init__(self, comm, nccl):
        self.nccl, self.size = nccl, comm.size
        unique_id = comm.broadcast_object(nccl.get_unique_id() if comm.rank == 0 else None)
        self.comm = nccl.NcclCommunicator(comm.size, unique_id, comm.rank)

    def sum_in_place(self, buffer):
        """Sum a contiguous device buffer over the ranks, in place (one ``ncclAllReduce``)."""
        if self.size > 1:
            self._all_reduce(buffer)  # pragma: no cover - needs a GPU
        return buffer

    def _all_reduce(self, buffer):  # pragma: no cover - needs a GPU
        import cupy
        nccl = self.nccl
        types = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
                 "float64": nccl.NCCL_FLOAT64, "int32": nccl.NCCL_INT32,
                 "int64": nccl.NCCL_INT64}
        if buffer.dtype.name not in types:
            raise TypeError(f"MPIStrategy: NCCL cannot sum {buffer.dtype.name} buffers")
        stream = cupy.cuda.get_current_stream()
        self.comm.allReduce(buffer.data.ptr, buffer.data.ptr, buffer.size,
                            types[buffer.dtype.name], nccl.NCCL_SUM, stream.ptr)
        stream.synchronize()  # the next step reads the sums
