"""What torch training needs of its process: torch installed (:func:`require_torch`) and set
up alike in every worker (:func:`configure_torch`): one thread count, deterministic
algorithms.

The same seed gives the same numbers whatever the number of workers because every
random draw of an instance comes from its own seeded generators (initial weights, data
order, dropout masks: :mod:`probmut.train.torch.fitting`), never from the order in which
a worker meets its instances, and because every worker computes with the same kernels
and the same number of threads.
"""

from __future__ import annotations

from probmut.train.tf_setup import require


def require_torch(what: str = "probmut train --framework torch") -> None:
    """Refuse, in one line, to go on without torch (the ``torch`` extra).

    >>> require_torch()   # torch is installed here
    """
    require("torch", "torch", what)


def configure_torch(threads: int) -> None:
    """Set torch up for training in this process: ``threads`` intra-op threads, one
    inter-op thread, deterministic algorithms (:func:`torch.use_deterministic_algorithms`).

    The inter-op pool can be sized only before torch's first parallel work; a process
    where it already ran (a reused worker) keeps its pool, which does not change results.

    >>> configure_torch(1)
    >>> import torch
    >>> torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    (1, True)
    """
    require_torch()
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already started: its size does not change any number
        pass
    torch.use_deterministic_algorithms(True)
    _thread_lock_for_tqdm()


def _thread_lock_for_tqdm() -> None:
    """torch.fx's interpreter (the layer table reads a model through it) opens a disabled
    tqdm bar, whose first use makes tqdm create a multiprocessing lock: a semaphore that a
    spawned worker never releases, so that the resource tracker warns of a leak when a
    run with workers ends. No bar of a worker crosses processes: a thread lock does."""
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())
