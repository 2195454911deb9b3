"""Training a stack: K instances of one population built, trained and scored together.

Member k starts from exactly the weights it gets when trained alone, trains on its own
(possibly mutated) training set in its own order, with its own optimiser state; see
:mod:`probmut.train.stack` for what is and is not bit-identical to ``model.fit``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from probmut import seeds
from probmut.io.records import loss_diverged
from probmut.train import fitting, models
from probmut.train.operators import OPERATORS, population_config
from probmut.train.stack.eligibility import sample_floats
from probmut.train.stack.model import StackedModel
from probmut.train.tasks import TASKS
from probmut.train.training_set import training_set
from probmut.train.work import Assignment, InstanceResult


def _fresh_session(seed: int) -> None:
    """The solo trainer's start for ``seed``: a fresh Keras session (without its garbage
    collection: the weights depend on the seed and the session's state, not on memory)."""
    import keras

    keras.backend.clear_session(free_memory=False)
    keras.utils.set_random_seed(seed)


def _unbuilt_weights(spec, dims, config, seed: int) -> list[np.ndarray] | None:
    """The initial weights a build of the model gets for ``seed``, without building it:
    the model is made in Keras' stateless scope, where a weight keeps its initializer and
    no TensorFlow variable is created, and each weight is its initializer's value (the
    call a build makes). None if the model cannot be made that way."""
    from keras.src.backend.common.stateless_scope import StatelessScope

    _fresh_session(seed)
    try:
        with StatelessScope(initialize_variables=False):
            model = models.build_model(spec, dims, config, compile=False)
        return [np.asarray(w._initializer(w.shape, w.dtype)) for w in model.weights]
    except Exception:  # noqa: BLE001 - any failure: the members are built for real
        return None


class SeedRecipe:
    """How one model's initial weights follow from the seed, without making the model.

    As a Keras model is made, each random initializer takes a seed drawn from Python's
    ``random`` (which :func:`keras.utils.set_random_seed` seeds), and an initializer with
    an integer seed is a function of its shape and that seed only. The recipe holds how
    many draws the model's making takes and, per weight, which draw seeds it (or its
    constant value): a member's weights are then a few initializer calls, not a model.

    Only Keras' own draws are allowed: a model function that also draws from Python's
    ``random`` (perhaps a number of times that depends on the seed) has no recipe.
    """

    def __init__(self, draws: int, sources: list):
        self.draws = draws
        self.sources = sources  # per weight: (initializer, shape, dtype, draw) or an array

    @classmethod
    def of(cls, spec, dims, config, seed: int, expected: list[np.ndarray]) -> SeedRecipe | None:
        """The model's recipe, read from its making for ``seed`` in Keras' stateless
        scope; None unless every weight is a seeded random or a constant initializer's
        and the recipe gives ``expected`` (the real build's weights) bit for bit."""
        import random

        import keras
        from keras.src.backend.common.stateless_scope import StatelessScope
        from keras.src.initializers.random_initializers import RandomInitializer

        _fresh_session(seed)
        before = random.getstate()
        keras_draws = _CountedDraws()
        try:
            with StatelessScope(initialize_variables=False), keras_draws:
                model = models.build_model(spec, dims, config, compile=False)
        except Exception:  # noqa: BLE001 - any failure: the members are built for real
            return None
        replay = random.Random()
        replay.setstate(before)
        drawn = [replay.randint(1, int(1e9)) for _ in range(keras_draws.count)]
        if replay.getstate() != random.getstate():  # something else drew from random too
            return None
        constant = (keras.initializers.Zeros, keras.initializers.Ones,
                    keras.initializers.Constant)
        sources = []
        for weight in model.weights:
            initializer = weight._initializer
            if type(initializer) in constant:
                sources.append(np.asarray(initializer(weight.shape, weight.dtype)))
            elif (isinstance(initializer, RandomInitializer) and type(initializer.seed) is int
                    and drawn.count(initializer.seed) == 1):
                sources.append((initializer, weight.shape, weight.dtype,
                                drawn.index(initializer.seed)))
            else:
                return None
        recipe = cls(len(drawn), sources)
        return recipe if _identical(recipe.weights(seed), expected) else None

    def weights(self, seed: int) -> list[np.ndarray]:
        """The initial weights of the model made after ``keras.utils.set_random_seed(seed)``."""
        import copy
        import random

        rng = random.Random(seed)  # Python's random as keras.utils.set_random_seed(seed) seeds it
        drawn = [rng.randint(1, int(1e9)) for _ in range(self.draws)]
        values = []
        for source in self.sources:
            if isinstance(source, np.ndarray):
                values.append(source.copy())
                continue
            initializer, shape, dtype, draw = source
            seeded = copy.copy(initializer)
            seeded.seed = drawn[draw]
            values.append(np.asarray(seeded(shape, dtype)))
        return values

    def checked_weights(self, spec, dims, config,
                        seeds: list[int]) -> list[list[np.ndarray]] | None:
        """Each of ``seeds``' weights by the recipe, the last one checked against the
        model's making for its seed (:func:`_unbuilt_weights`); None if they differ."""
        weights = [self.weights(seed) for seed in seeds]
        made = _unbuilt_weights(spec, dims, config, seeds[-1])
        return weights if made is not None and _identical(weights[-1], made) else None


class _CountedDraws:
    """While active, stands in for Python's ``random`` in Keras' seed module: it counts
    the seeds Keras draws (its ``make_default_seed``) and draws them as usual."""

    def __enter__(self):
        from keras.src.random import seed_generator

        self.count, self._module, self._random = 0, seed_generator, seed_generator.python_random
        seed_generator.python_random = self
        return self

    def randint(self, low: int, high: int) -> int:
        self.count += 1
        return self._random.randint(low, high)

    def __exit__(self, *exc):
        self._module.python_random = self._random
        return False


def _identical(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and np.array_equal(x, y)
                                    for x, y in zip(a, b, strict=True))


def starting_weights(spec, dims, config, seeds: list[int]) -> tuple:
    """:func:`_starts` without the recipe: the stack's template and its members' weights."""
    return _starts(spec, dims, config, seeds)[:2]


def _starts(spec, dims, config, seeds: list[int]) -> tuple:
    """The stack's template (member 0's model, built as the solo trainer builds it) and
    each member's initial weights, bit for bit those it gets when trained alone.

    Building a Keras model spends most of its time creating a TensorFlow variable per
    weight, and making one most of the rest; the members after the first take the
    model's :class:`SeedRecipe` instead, ten times faster, once it gives member 0's
    built weights and the last member's made ones bit for bit (else, for a model whose
    build does more than initialise its weights, every member is built); and the
    recipe, None where there is none."""
    import gc

    _fresh_session(seeds[0])
    template = models.build_model(spec, dims, config)
    weights = [template.get_weights()]
    recipe = SeedRecipe.of(spec, dims, config, seeds[0], weights[0])
    others = [] if len(seeds) == 1 else (
        recipe and recipe.checked_weights(spec, dims, config, seeds[1:]))
    if others is None:  # no recipe, or one that the check refutes
        recipe, others = None, []
        for seed in seeds[1:]:
            _fresh_session(seed)
            others.append(models.build_model(spec, dims, config).get_weights())
    gc.collect()  # once per stack, not once per member
    return template, weights + others, recipe


def data_order(seed: int, n: int, epochs: int) -> np.ndarray:
    """Member ``seed``'s training order: one permutation of ``n`` samples per epoch.

    >>> data_order(7, 5, 2).shape
    (2, 5)
    """
    rng = seeds.generator(seed, "data order")  # a stream apart from the mutation's draws
    return np.stack([rng.permutation(n) for _ in range(epochs)])


def _fused_adam(optimizer, variables):
    """For a plain Keras Adam (no AMSGrad, weight decay, moving average, clipping, loss
    scaling, accumulation or schedule), its update of ``variables`` as TensorFlow's fused
    Adam kernel: one pass over each weight and its two moments instead of Keras' ten
    elementwise operations, which on a stack's weights cost a fifth of a digits_cnn step.
    The same update as Keras' (epsilon outside the square root, the step's bias
    corrections in the learning rate), equal up to float rounding; Keras' own slots and
    step counter are the state. None for any other optimizer."""
    import keras
    import tensorflow as tf

    schedule = keras.optimizers.schedules.LearningRateSchedule
    if not (type(optimizer) is keras.optimizers.Adam and not optimizer.amsgrad
            and optimizer.weight_decay is None and not optimizer.use_ema
            and optimizer.clipnorm is None and optimizer.clipvalue is None
            and optimizer.global_clipnorm is None and optimizer.loss_scale_factor is None
            and not optimizer.gradient_accumulation_steps
            and not isinstance(optimizer._learning_rate, schedule)):
        return None
    slots = [(optimizer._momentums[optimizer._get_variable_index(v)],
              optimizer._velocities[optimizer._get_variable_index(v)]) for v in variables]
    beta_1, beta_2, epsilon = (tf.constant(value, tf.float32) for value in
                               (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon))

    def update(gradients):
        step = tf.cast(optimizer.iterations + 1, tf.float32)
        rate = tf.cast(optimizer.learning_rate, tf.float32)
        powers = {"beta1_power": beta_1 ** step, "beta2_power": beta_2 ** step}  # once a step
        for variable, (m, v), gradient in zip(variables, slots, gradients, strict=True):
            tf.raw_ops.ResourceApplyAdam(var=variable.handle, m=m.handle, v=v.handle, lr=rate,
                                         beta1=beta_1, beta2=beta_2, epsilon=epsilon,
                                         grad=gradient, **powers)
        optimizer.iterations.assign_add(1)

    return update


class _TrainingSteps:
    """The training steps of one stacked model with one configuration, traced once and
    reused by every stack that model trains with it: the steps read the members' data
    from pools that each stack refills, and the optimiser's state is reset to its
    freshly built values for each stack (a trace costs about a third of a second, a
    twentieth of a digits_cnn stack)."""

    def __init__(self, stack: StackedModel, config: models.TrainConfig, x_pool: np.ndarray,
                 y_pool: np.ndarray):
        import keras
        import tensorflow as tf

        # the pools' lengths change from stack to stack, a sample's shape does not
        self.x_pool, self.y_pool = (tf.Variable(pool, trainable=False,
                                                shape=tf.TensorShape([None, *pool.shape[1:]]))
                                    for pool in (x_pool, y_pool))
        loss_fn = keras.losses.get(config.loss)
        self.optimizer = models.make_optimizer(config)
        variables = stack.variables
        self.optimizer.build(variables)
        self.fresh_state = [v.numpy() for v in self.optimizer.variables]
        update = _fused_adam(self.optimizer, variables) or functools.partial(
            self.optimizer.apply, trainable_variables=variables)

        def step(x_rows, y_rows, number):
            x, y = tf.gather(self.x_pool, x_rows), tf.gather(self.y_pool, y_rows)
            with tf.GradientTape() as tape:
                per_member = tf.reduce_mean(loss_fn(y, stack(x, True, number)), axis=1)
                total = tf.reduce_sum(per_member)  # d total / d member k = its own mean loss
            update(tape.gradient(total, variables))
            return per_member

        rows = tf.TensorSpec([None, stack.size, None], tf.int64)  # steps x members x batch

        @tf.function(input_signature=[rows, rows, tf.TensorSpec([], tf.int64)],
                     autograph=False)  # nothing to convert: tracing is twice as fast
        def run(x_rows, y_rows, first):
            """Steps ``first``, ``first + 1``, ... on the batches ``x_rows[i]``,
            ``y_rows[i]``, looped in the graph (called one by one from Python, a seventh
            of a digits_cnn step went to the calls); the members' losses, steps x K."""
            def body(i, losses):
                return i + 1, losses.write(i, step(x_rows[i], y_rows[i],
                                                   first + tf.cast(i, tf.int64)))

            count = tf.shape(x_rows)[0]
            _, losses = tf.while_loop(lambda i, _: i < count, body,
                                      (tf.constant(0), tf.TensorArray(tf.float32, size=count)))
            return losses.stack()

        self.run = run

    def restart(self, x_pool: np.ndarray, y_pool: np.ndarray) -> None:
        """Fill the pools with a new stack's data; the optimiser starts afresh."""
        self.x_pool.assign(x_pool)
        self.y_pool.assign(y_pool)
        for variable, value in zip(self.optimizer.variables, self.fresh_state, strict=True):
            variable.assign(value)


def fit_stack(stack: StackedModel, xs: list, ys: list, n_classes: int,
              config: models.TrainConfig, orders: list[np.ndarray]):
    """Train ``stack`` in place: member k on ``(xs[k], ys[k])`` in the order ``orders[k]``
    (epochs x n). All members have the same number of samples. Returns the members'
    mean training loss per epoch, shape (K, epochs), and each member's loss on its first
    batch, before any update (its untrained loss, as :func:`probmut.train.fitting.fit`
    reports it), shape (K,)."""
    import tensorflow as tf

    size, n = stack.size, len(ys[0])
    distinct = {}  # members sharing one input array (healthy, label mutants) share it
    for x in xs:
        distinct.setdefault(id(x), (len(distinct), x))
    starts = np.cumsum([0] + [len(x) for _, x in distinct.values()])
    x_offsets = np.array([starts[distinct[id(x)][0]] for x in xs])[:, None]
    targets = TASKS["classification"].targets
    y_offsets = (np.arange(size) * n)[:, None]
    x_pool = np.concatenate([x for _, x in distinct.values()])
    y_pool = np.concatenate([targets(y, n_classes, config.loss) for y in ys])
    key = repr(config)  # a config may hold a dict (a serialized optimizer)
    if key in stack.steps:
        stack.steps[key].restart(x_pool, y_pool)
    else:
        stack.steps[key] = _TrainingSteps(stack, config, x_pool, y_pool)
    run = stack.steps[key].run

    batch = n if config.full_batch else config.batch_size
    whole = n // batch * batch  # the epoch's full batches; a shorter last one on its own
    history = np.zeros((size, config.epochs))
    number = 0
    for epoch in range(config.epochs):
        order = np.stack([o[epoch] for o in orders])  # K x n
        parts = [order[:, :whole].reshape(size, -1, batch).transpose(1, 0, 2)] if whole else []
        if whole < n:
            parts.append(order[:, None, whole:].transpose(1, 0, 2))
        sums, batches = np.zeros(size), 0
        for rows in parts:  # steps x K x batch
            losses = run(tf.constant(rows + x_offsets), tf.constant(rows + y_offsets),
                         tf.constant(number, tf.int64)).numpy()
            if number == 0:
                initial = losses[0].astype(np.float64)
            for step_losses in losses:
                sums += step_losses
            batches, number = batches + len(rows), number + len(rows)
        history[:, epoch] = sums / batches
    return history, initial


def predict_classes(stack: StackedModel, x_test) -> np.ndarray:
    """(K, n_test): each member's predicted class for each test input.

    Inputs go through in chunks of at most 256 MiB of activations for the whole stack."""
    import tensorflow as tf

    batch = int(np.clip(2**26 // (stack.size * sample_floats(stack.template)), 1, 1024))
    predicted = []
    for start in range(0, len(x_test), batch):
        chunk = tf.constant(x_test[start:start + batch])
        x = tf.broadcast_to(chunk[None], [stack.size, *chunk.shape])
        predicted.append(tf.argmax(stack(x, False), axis=-1).numpy())
    return np.concatenate(predicted, axis=1)


def member_data(assignments: list[Assignment], dataset) -> tuple[list, list]:
    """Each assignment's training set: the dataset's (with its validation set for a
    population trained without one, :func:`probmut.train.training_set.training_set`), or the
    data mutation drawn with the instance's own seed (exactly the set it gets when
    trained alone)."""
    xs, ys = [], []
    for assignment in assignments:
        operator = OPERATORS[assignment.operator] if assignment.operator else None
        x, y = training_set(dataset, population_config(assignment.settings.config, operator,
                                                       assignment.params),
                            operator, assignment.params, assignment.seed)
        xs.append(x)
        ys.append(y)
    return xs, ys


_PREVIOUS: dict = {}  # the stacked model this process trained last and its seed recipe


def _stacked_model(architecture: str, spec, dims, config, seeds: list[int]) -> StackedModel:
    """A stacked model of the ``architecture`` (its ``spec``) with ``config`` for
    members ``seeds``: the one this process trained last, restarted with their weights
    (from its :class:`SeedRecipe` where it has one), where it is of the same
    architecture, configuration and size (its traced training steps are then reused),
    else a new one."""
    key = (architecture, repr(dims), repr(config), len(seeds))
    if key in _PREVIOUS:
        stack, recipe = _PREVIOUS[key]
        weights = recipe and recipe.checked_weights(spec, dims, config, seeds)
        if weights is None:
            _, weights, recipe = _starts(spec, dims, config, seeds)
        stack.restart(weights, seeds)
        _PREVIOUS[key] = stack, recipe
        return stack
    template, weights, recipe = _starts(spec, dims, config, seeds)
    _PREVIOUS.clear()
    _PREVIOUS[key] = StackedModel(template, weights, seeds), recipe
    return _PREVIOUS[key][0]


def train_stack(assignments: list[Assignment], *, dataset) -> list[InstanceResult]:
    """Train the instances ``assignments`` (one population, not model-level) as one stack
    and score them; one :class:`~probmut.train.work.InstanceResult` per assignment, in order,
    with each member's symptom record (its losses; ``diverged`` by the rule of
    :func:`probmut.io.records.loss_diverged`; constant predictions) and, if its assignment
    asks,
    its weights and its model as ``.keras`` bytes. A member's ``seconds`` is NaN (unknown):
    the stack's wall time is shared, not any one instance's training time, and a share
    of it would make populations look faster or slower than they train alone."""
    import keras

    settings = assignments[0].settings
    operator = OPERATORS[assignments[0].operator] if assignments[0].operator else None
    config = settings.config
    if operator is not None and operator.level == "training":
        config = operator.apply(config, assignments[0].params)
    seeds = [assignment.seed for assignment in assignments]
    xs, ys = member_data(assignments, dataset)
    spec = models.resolve_model(settings.architecture, dataset.dims)
    results = [None] * len(assignments)
    by_size = {}  # a stack trains members with equally many samples together
    for k, y in enumerate(ys):
        by_size.setdefault(len(y), []).append(k)
    for members in by_size.values():
        member_seeds = [seeds[k] for k in members]
        stack = _stacked_model(settings.architecture, spec, dataset.dims, config, member_seeds)
        orders = [data_order(s, len(ys[members[0]]), config.epochs) for s in member_seeds]
        history, initial = fit_stack(stack, [xs[k] for k in members], [ys[k] for k in members],
                                     dataset.n_classes, config, orders)
        predicted = predict_classes(stack, dataset.x_test)
        solo = None  # one solo model per stack, saved with each member's weights in turn
        for j, k in enumerate(members):
            losses = tuple(float(v) for v in history[j])
            keep = assignments[k].keep_weights or assignments[k].save_model
            weights = stack.member_weights(j) if keep else None
            model_bytes = None
            if assignments[k].save_model:
                if solo is None:  # its layers named as if built alone
                    keras.backend.clear_session(free_memory=False)
                    solo = models.build_model(spec, dataset.dims, config)
                solo.set_weights(weights)
                model_bytes = fitting.keras_bytes(solo)
            results[k] = dict(
                correct=predicted[j] == dataset.y_test, loss_history=losses,
                initial_loss=float(initial[j]),
                status="diverged" if loss_diverged(float(initial[j]), losses) else "ok",
                constant=bool(np.all(predicted[j] == predicted[j][0])),
                weights=weights if assignments[k].keep_weights else None, model_bytes=model_bytes)
    return [InstanceResult(population=t.population, instance=t.instance, seed=seed,
                           accuracy=float(r["correct"].mean()), seconds=math.nan, **r)
            for t, seed, r in zip(assignments, seeds, results, strict=True)]


def stacked_model(settings, dataset, instance: int, population: str):
    """Solo Keras model holding the weights ``instance`` of ``population`` gets when
    trained in a stack (for model-level mutants whose healthy weights were not kept)."""
    spec = models.resolve_model(settings.architecture, dataset.dims)
    result = train_stack([Assignment(settings, population, instance, keep_weights=True)],
                         dataset=dataset)[0]
    model = models.build_model(spec, dataset.dims, settings.config)
    model.set_weights(result.weights)
    return model
