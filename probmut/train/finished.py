"""What a run keeps of each finished instance: its record and, when asked for, its
model and its trained weights (the files: :mod:`probmut.io.workdir`; the models:
``OUT/models/{population}/{id}`` and the trainer's suffix, ``.keras`` for Keras). A
record means the instance is done.
"""

from __future__ import annotations

from pathlib import Path

from probmut.io.atomic import atomic_write_bytes
from probmut.io.records import InstanceRecord
from probmut.io.workdir import StoredInstance, read_record, write_record, write_weights
from probmut.train.work import InstanceResult


def model_path(out: Path, population: str, instance: int, suffix: str = ".keras") -> Path:
    """Where ``save_models`` keeps an instance's model (``suffix``: its file's)."""
    return Path(out) / "models" / population / f"{instance:05d}{suffix}"


def saved_model(out: Path, population: str, instance: int) -> Path | None:
    """The model ``save_models`` kept for an instance, whatever its suffix (none
    included), or None."""
    bare = model_path(out, population, instance, "")
    return bare if bare.is_file() else next(bare.parent.glob(f"{bare.name}.*"), None)


def save_record(out: Path, result: InstanceResult, suffix: str = ".keras") -> None:
    """Keep a finished instance: its model (``save_models``; its file's ``suffix``), its
    weights (healthy instances of model-level runs), then its record, which means "done"
    with both."""
    if result.model_bytes is not None:
        atomic_write_bytes(model_path(out, result.population, result.instance, suffix),
                           result.model_bytes)
    if result.weights is not None:
        write_weights(out, result.instance, result.weights)
    record = InstanceRecord(
        instance=result.instance, accuracy=result.accuracy, seed=result.seed,
        status=result.status, seconds=result.seconds, loss_history=result.loss_history,
        initial_loss=result.initial_loss, constant=result.constant, error=result.error)
    write_record(out, result.population, record, result.correct, result.match, result.read)


def load_record(out: Path, population: str, instance: int) -> StoredInstance | None:
    """A finished instance's record (:class:`~probmut.io.workdir.StoredInstance`: its
    symptom record, its outcomes (empty when it was not scored), for a derived model-level
    mutant how closely it matches its healthy instance (:data:`probmut.train.flags.MATCHES`;
    else None), and the hyperparameters a user's training code read (None: unknown)); or
    None if the record is missing or damaged (warned: :func:`probmut.io.workdir.read_record`)."""
    return read_record(out, population, instance)
