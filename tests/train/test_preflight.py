"""The checks of a run that need Keras (probmut.train.preflight): the same answer in a
worker as here, and plain data that crosses to the driver."""

import pickle

import pytest

from probmut.train.operators import parse_mutations

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("tensorflow")
    from probmut.train.datasets import load_dataset
    from probmut.train.tf_setup import configure_tensorflow

    configure_tensorflow(1)
    return load_dataset("digits")


def test_a_mutation_crosses_to_a_worker_and_back_by_its_operators_name():
    mutation = parse_mutations("change_activation_function:elu@0")[0]
    again = pickle.loads(pickle.dumps(mutation))
    assert again == mutation and again.operator is mutation.operator
    assert again.params == mutation.params


def test_preflight_binds_in_order_chooses_the_stack_and_finds_what_cannot_stack(digits):
    from probmut.train.legality import prepare
    from probmut.train.preflight import preflight

    checked = prepare(parse_mutations("delete_training_data:10"), None, digits, None)
    unchecked = [m for text in ("add_weights_regularisation", "weights_fuzzing:0.1_1")
                 for m in parse_mutations(text)]
    found = preflight("digits_cnn", {"epochs": 1}, checked, unchecked, None, dataset=digits)
    assert found.config.epochs == 1 and found.stack == 20  # digits_cnn: small, stacked
    assert [m.population for m in found.mutations] == [
        "delete_training_data_10", "add_weights_regularisation_l2", "weights_fuzzing_0.1_1"]
    # the regularised mutant trains alone, named as in a fresh session; model-level
    # mutants derive from healthy instances and are not asked
    assert found.unstackable == {
        "add_weights_regularisation_l2": "layer conv2d has a kernel regularizer"}
    assert pickle.loads(pickle.dumps(found)) == found  # what a worker sends back
    one = preflight("digits_cnn", {}, checked, [], 1, dataset=digits)
    assert one.choice is None and one.unstackable == {}  # one at a time: nothing to stack
