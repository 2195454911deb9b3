"""Activations and layer-wise relevance propagation (LRP) of a trained Keras model, for
``probmut coverage`` (DeepImportance).

Relevance: the epsilon rule of Bach et al. (2015), as DeepImportance uses it. The
relevance of an input starts at the output layer as the pre-softmax score (logit) of
the predicted class, all other outputs getting none. A layer with weights (Dense,
Conv) passes relevance ``R_j`` of its unit ``j`` down to its inputs ``i`` in proportion
to their contributions ``z_ij = a_i w_ij`` to the unit's pre-activation
``z_j = sum_i z_ij + b_j``::

    R_i = sum_j  z_ij / (z_j + epsilon * sign(z_j)) * R_j        (sign(0) = 1)

computed for a whole batch as ``a * grad_a(sum_j z_j(a) * s_j)`` with ``s_j = R_j /
(z_j + epsilon sign(z_j))`` held constant. Pooling layers use the same rule (max
pooling: the winner takes the relevance); activations, dropout and reshaping layers
pass relevance through unchanged. The bias and epsilon absorb some relevance, so a
layer's relevances sum to the output's only up to those terms; for a bias-free ReLU
network with epsilon -> 0 they sum to it exactly and equal gradient x input.

The relevance of a *neuron* of a convolutional layer (a channel) is the sum over its
positions; its *activation* (for clustering and coverage) is the mean over its
positions, as in DeepImportance and DeepGauge.

Supported: sequential models of Dense, Conv1D/2D/3D, pooling, Flatten, Reshape,
Dropout, Activation/ReLU and the like; anything else is a clear error.

References
----------
Bach, Binder, Montavon, Klauschen, Mueller, Samek. On pixel-wise explanations for
non-linear classifier decisions by layer-wise relevance propagation. PLOS ONE, 2015.

Gerasimou, Eniser, Sen, Cakan. Importance-driven deep learning system testing. ICSE 2020.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.layer_traits import has_kernel, is_input, kind, traits_of


def _kind(layer) -> str:
    """How relevance passes ``layer``: its trait (:mod:`probmut.train.layer_traits`), or
    ``"linear"`` for a layer with weights."""
    passes = traits_of(layer).relevance
    if passes is not None:
        return passes
    if has_kernel(layer) and hasattr(layer, "activation"):
        return "linear"
    raise ProbmutError(f"layer {layer.name} ({kind(layer)}): relevance propagation supports "
                       "Dense, Conv, pooling, Flatten, Reshape, Dropout and activation layers")


def neuron_layers(model) -> list[int]:
    """Indices of the hidden layers with neurons (weights): every Dense/Conv layer but
    the output layer."""
    return [i for i, layer in enumerate(model.layers[:-1]) if has_kernel(layer)]


def default_layer(model) -> int:
    """The penultimate layer, as DeepImportance analyses it: the last hidden layer with
    neurons."""
    hidden = neuron_layers(model)
    if not hidden:
        raise ProbmutError("the model has no hidden layer with neurons (Dense or Conv)")
    return hidden[-1]


def _call(layer, a):
    return a if is_input(layer) else layer(a, training=False)


def check_model(model, layer: int, x) -> None:
    """Refuse what the relevance and coverage code cannot handle: a layer index outside
    the hidden layers, an unsupported layer, an output layer without weights, or a model
    that is not a chain of its layers (checked numerically on a few inputs)."""
    if not getattr(model, "layers", None):
        raise ProbmutError("coverage needs a Keras model with layers")
    if not 0 <= layer < len(model.layers) - 1:
        raise ProbmutError(f"layer {layer} is out of range: choose a hidden layer between 0 and "
                           f"{len(model.layers) - 2}")
    for item in model.layers:
        _kind(item)
    if _kind(model.layers[-1]) != "linear":
        raise ProbmutError(f"the output layer {model.layers[-1].name} has no weights; relevance "
                           "starts from the output layer's pre-activation scores")
    a = x[:8]
    for item in model.layers:
        a = _call(item, a)
    if not np.allclose(np.asarray(a), np.asarray(model(x[:8], training=False)), rtol=1e-4,
                       atol=1e-5):
        raise ProbmutError("coverage supports models that are a chain of their layers "
                           "(sequential); this one is not")


def _linear(layer, a):
    """The layer's pre-activation: its own op with the activation switched off."""
    activation = layer.activation
    try:
        layer.activation = None
        return layer(a)
    finally:
        layer.activation = activation


def _batches(count: int, size: int):
    for start in range(0, count, size):
        yield slice(start, min(start + size, count))


def neuron_values(outputs: np.ndarray) -> np.ndarray:
    """One value per neuron: a Dense unit's output, a convolution channel's mean over its
    positions: ``(inputs, neurons)``."""
    outputs = np.asarray(outputs)
    return outputs.reshape(outputs.shape[0], -1, outputs.shape[-1]).mean(axis=1) \
        if outputs.ndim > 2 else outputs


def activations(model, x, layers, batch_size: int = 1024) -> dict:
    """:class:`~probmut.coverage.LayerValues` of ``layers`` for the inputs ``x``: neuron
    values (:func:`neuron_values`) and each input's min and max over the layer's whole
    output; batched."""
    from probmut.coverage import LayerValues

    wanted = sorted(set(layers))
    collected: dict[int, list] = {i: [] for i in wanted}
    for rows in _batches(len(x), batch_size):
        a = x[rows]
        for index, layer in enumerate(model.layers[:wanted[-1] + 1]):
            a = _call(layer, a)
            if index in collected:
                out = np.asarray(a)
                flat = out.reshape(out.shape[0], -1)
                collected[index].append((neuron_values(out), flat.min(axis=1), flat.max(axis=1)))
    return {i: LayerValues(*(np.concatenate(part) for part in zip(*parts, strict=True)))
            for i, parts in collected.items()}


def relevance(model, x, layer: int, epsilon: float = 0.01, batch_size: int = 512) -> np.ndarray:
    """Epsilon-rule relevance of the neurons of ``layer`` for each input: ``(inputs,
    neurons)`` (a convolution channel's relevance summed over its positions)."""
    import tensorflow as tf

    layers = model.layers
    parts = []
    for rows in _batches(len(x), batch_size):
        a = tf.convert_to_tensor(x[rows])
        inputs = []  # the input of every layer after `layer`
        for index, item in enumerate(layers):
            if index > layer:
                inputs.append(a)
            a = _call(item, a) if index < len(layers) - 1 else None
        logits = _linear(layers[-1], inputs[-1])
        mask = tf.one_hot(tf.argmax(logits, axis=-1), logits.shape[-1], dtype=logits.dtype)
        r = logits * mask
        for item, a in zip(reversed(layers[layer + 1:]), reversed(inputs), strict=True):
            r = _backward(item, a, r, epsilon)
        r = np.asarray(r)
        parts.append(r.reshape(r.shape[0], -1, r.shape[-1]).sum(axis=1) if r.ndim > 2 else r)
    return np.concatenate(parts)


def _backward(layer, a, r, epsilon: float):
    """Relevance of ``layer``'s inputs ``a`` from the relevance ``r`` of its outputs."""
    import tensorflow as tf

    kind = _kind(layer)
    if kind == "pass":
        return r
    if kind == "reshape":
        return tf.reshape(r, tf.shape(a))
    with tf.GradientTape() as tape:
        tape.watch(a)
        z = _linear(layer, a) if kind == "linear" else _call(layer, a)
        stabilised = z + epsilon * tf.where(z >= 0, 1.0, -1.0)
        s = tf.stop_gradient(r / stabilised)
        total = tf.reduce_sum(z * s)
    return a * tape.gradient(total, a)


def layer_and_output(model, x, layer: int, batch_size: int = 1024) -> list:
    """Per batch of the inputs ``x``: ``layer``'s output (a tensor) and the model's
    output (an array), computed once for every knockout of :func:`knockout_effect`."""
    parts = []
    for rows in _batches(len(x), batch_size):
        a = x[rows]
        for item in model.layers[:layer + 1]:
            a = _call(item, a)
        output = a
        for item in model.layers[layer + 1:]:
            output = _call(item, output)
        parts.append((a, np.asarray(output)))
    return parts


def knockout_effect(model, layer: int, neurons, batches) -> tuple[float, float]:
    """What silencing the given neurons of ``layer`` (their outputs set to zero) does to
    the model on the inputs of ``batches`` (:func:`layer_and_output`; DeepImportance's RQ1
    perturbation): ``(mean drop of the model's output for its originally predicted
    class, share of inputs whose predicted class changes)``. For a softmax output the
    first is a drop in probability. Only the layers after ``layer`` run again."""
    import tensorflow as tf

    keep = np.ones(model.layers[layer].output.shape[-1], dtype=np.float32)
    keep[list(neurons)] = 0.0
    drop, changed, inputs = 0.0, 0, 0
    for a, before in batches:
        after = a * tf.constant(keep)
        for item in model.layers[layer + 1:]:
            after = _call(item, after)
        after = np.asarray(after)
        predicted = before.argmax(axis=1)
        picked = np.arange(len(predicted))
        drop += float(np.sum(before[picked, predicted] - after[picked, predicted]))
        changed += int(np.sum(after.argmax(axis=1) != predicted))
        inputs += len(predicted)
    return drop / inputs, changed / inputs


def sanity_check(model, x, layer: int, important, draws: int = 50, seed: int = 0):
    """DeepImportance's RQ1: silence the ``important`` neurons of ``layer``, then
    ``draws`` random sets of as many neurons of that layer, and compare what each does to
    the outputs on ``x`` (:func:`knockout_effect`): a :class:`~probmut.coverage.Sanity`."""
    from probmut.coverage import Sanity

    rng = np.random.default_rng(seed)
    units = model.layers[layer].output.shape[-1]
    batches = layer_and_output(model, x, layer)
    drop, changed = knockout_effect(model, layer, important, batches)
    random = np.array([knockout_effect(model, layer,
                                       rng.choice(units, len(important), replace=False),
                                       batches)
                       for _ in range(draws)])
    return Sanity(len(important), drop, float(random[:, 0].mean()),
                  float(np.mean(random[:, 0] >= drop)), changed, float(random[:, 1].mean()), draws)


def measure_coverage(paths, dataset, *, layer: int | None = None, neurons=(6, 8, 10, 12),
                     epsilon: float = 0.01, max_clusters: int = 4, nc_threshold: float = 0.75,
                     sections: int = 1000, top_k: int = 3, seed: int = 0,
                     sanity_draws: int = 0, progress: bool = True):
    """IDC and the baselines of ``dataset``'s test set for each saved model in ``paths``
    (one healthy instance each): a :class:`~probmut.coverage.CoverageStudy`.

    ``sanity_draws`` > 0 also runs DeepImportance's RQ1 check on each instance
    (:func:`sanity_check`) for the first number of neurons."""
    from probmut.coverage import CoverageStudy, instance_coverage
    from probmut.progress import progress as progress_bar
    from probmut.train.evaluate import instance_ids, load_model, unreadable

    neurons = tuple(neurons)
    if not paths:
        raise ProbmutError("no saved models to measure coverage on (give .keras or .h5 files "
                           "of healthy instances, e.g. a run trained with --save-models)")
    instances, names = [], {}
    pairs = list(zip(paths, instance_ids(paths), strict=True))
    bar = progress_bar(len(pairs), "coverage", enabled=progress, unit="model")
    for path, instance in pairs:
        if (problem := unreadable(path)) is not None:  # Keras calls a truncated file "not found"
            raise ProbmutError(f"{path}: cannot load the model: {problem}")
        try:
            model = load_model(path)
        except Exception as error:
            raise ProbmutError(f"{path}: cannot load the model ({error})") from None
        index = default_layer(model) if layer is None else layer
        check_model(model, index, dataset.x_train)
        chosen = model.layers[index]  # layer names differ between builds: not compared
        shape = f"(layer {index}, {chosen.output.shape[-1]} neurons)"
        names.setdefault(f"{type(chosen).__name__} {shape}", f"{chosen.name} {shape}")
        hidden = neuron_layers(model)
        train = activations(model, dataset.x_train, [*hidden, index])
        test = activations(model, dataset.x_test, [*hidden, index])
        measured = instance_coverage(
            str(instance), relevance(model, dataset.x_train, index, epsilon),
            train[index].values, test[index].values, [train[i] for i in hidden],
            [test[i] for i in hidden], max(neurons), max_clusters=max_clusters,
            nc_threshold=nc_threshold, sections=sections, top_k=top_k, seed=seed)
        if sanity_draws:
            check = sanity_check(model, dataset.x_test, index,
                                 measured.importance[:neurons[0]], sanity_draws, seed)
            measured = dataclasses.replace(measured, sanity=check)
        instances.append(measured)
        bar.update()
    bar.close()
    if len(names) > 1:
        raise ProbmutError(f"the models differ at the chosen layer ({'; '.join(sorted(names))});"
                           " give instances of one architecture")
    settings = {"epsilon": epsilon, "max_clusters": max_clusters, "nc_threshold": nc_threshold,
                "sections": sections, "top_k": top_k, "seed": seed}
    return CoverageStudy(next(iter(names.values())), neurons, tuple(instances),
                         len(dataset.y_test), settings)
