"""The bundled trainer: healthy and mutant populations with TensorFlow (``probmut train``).

Modules: :mod:`~probmut.train.datasets` (data sets and their provenance),
:mod:`~probmut.train.tasks` (how an instance is scored), :mod:`~probmut.train.models`,
:mod:`~probmut.train.operators` (the mutation operators' registry),
:mod:`~probmut.train.legality` (checks before training), :mod:`~probmut.train.dryrun`
(what each mutation changes, nothing trained), :mod:`~probmut.train.flags`
(equivalent, broken and surviving populations; DeepMutation's quality control),
:mod:`~probmut.train.instance` (one instance),
:mod:`~probmut.train.stack` (instances trained as one stack), :mod:`~probmut.train.run`
(resumable population runs), :mod:`~probmut.train.backends` (serial, local processes,
Ray) and :mod:`~probmut.io.outcomes` (per-input outcomes, NumPy only). Importing this
package does not import TensorFlow.
"""
