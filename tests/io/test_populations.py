"""Reading and validating populations: both formats, the paper's real traps, instances
that failed (dropped with a warning naming them, or refused), files without symptom
columns."""

import math
import warnings

import pytest

from probmut.errors import ProbmutError
from probmut.io.populations import (
    MissingAccuracyWarning,
    read_instances,
    read_population,
    write_deepcrime,
    write_instances,
    write_tidy,
)
from probmut.io.records import FailedInstanceWarning, InstanceRecord
from probmut.population import Population, pair

from ..conftest import RAW


def test_reads_deepcrime_format_with_instance_ids():
    pop = read_population(RAW / "mnist" / "results_mnist_original.csv")
    assert len(pop) == 200 and pop.ids.tolist() == list(range(200))
    assert 0.98 < pop.values.mean() < 1
    assert pop.values[0] == 0.991699993610382  # all 16 digits kept


def test_tidy_round_trip_keeps_ids(tmp_path):
    pop = Population.from_values([0.5, 0.25, 0.125], ids=[7, 3, 11], name="p")
    write_tidy(pop, tmp_path / "p.csv")
    back = read_population(tmp_path / "p.csv")
    assert dict(zip(back.ids.tolist(), back.values.tolist(), strict=True)) == {
        7: 0.5, 3: 0.25, 11: 0.125}


def test_deepcrime_round_trip_keeps_ids_and_every_digit(tmp_path):
    records = [InstanceRecord(0, 0.991699993610382), InstanceRecord(4, 0.25),
               InstanceRecord(5, float("nan"), status="crashed"),
               InstanceRecord(7, 0.125, status="diverged")]
    write_deepcrime(tmp_path / "p.deepcrime.csv", records)
    back = read_population(tmp_path / "p.deepcrime.csv")
    # failed instances are left out: DeepCrime's format has no status
    assert back.ids.tolist() == [0, 4] and back.values.tolist() == [0.991699993610382, 0.25]


def test_instances_are_kept_in_the_order_of_their_ids():
    # So that a population's numbers never depend on the order its rows were given in.
    pop = Population.from_values([0.5, 0.25, 0.125], ids=[7, 3, 11])
    assert pop.ids.tolist() == [3, 7, 11] and pop.values.tolist() == [0.25, 0.5, 0.125]


def test_tidy_allows_extra_columns(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("seed,instance,accuracy,seconds\n1,0,0.9,3.2\n2,1,0.8,3.1\n")
    assert read_population(path).values.tolist() == [0.9, 0.8]


def test_missing_instance_is_dropped_with_a_warning_naming_it():
    path = RAW / "deepcrime_comp" / "results_lenet_change_label_mutated0_MP_3.12_dc.csv"
    with pytest.warns(MissingAccuracyWarning, match=r"results_lenet_change_label.*\[15\]"):
        pop = read_population(path)
    assert len(pop) == 19 and 15 not in pop.ids


def test_missing_instance_with_strict_is_an_error():
    path = RAW / "deepcrime_comp" / "results_lenet_change_label_mutated0_MP_6.25_dc.csv"
    with pytest.raises(ProbmutError, match=r"no accuracy for instance\(s\) \[6\]"):
        read_population(path, strict=True)


def test_values_outside_unit_interval_are_refused():
    path = (RAW / "lenet"
            / "results_lenet_change_loss_function_mutated0_MP_categorical_crossentropy.csv")
    with pytest.raises(ProbmutError, match=r"outside \[0, 1\].*largest 7\.7") as refused:
        read_population(path)
    assert "percentages" not in str(refused.value)  # losses, most of them below 1


def test_percentages_are_refused_with_the_hint_to_divide_them(tmp_path):
    path = tmp_path / "percent.csv"
    path.write_text("instance,accuracy\n0,97.5\n1,96.1\n2,98\n")
    with pytest.raises(ProbmutError, match=r"largest 98\).*look like percentages: divide them "
                                           "by 100"):
        read_population(path)


@pytest.mark.parametrize("content, message", [
    ("", "empty"),
    ("instance,accuracy\n", "no accuracies"),
    ("instance,accuracy\n0,abc\n", "'abc' is not a number"),
    ("instance,accuracy\nx,0.9\n", "not an integer"),
    ("instance,accuracy\n0,0.9\n1,0.8\n0,0.7\n", "duplicate instance"),
    ("a;b;c\n1;2;3\n", "unknown format"),
    ("true_label;pred_label_model_0;pred_label_model_1\n;0.9\n", "header names 2 instances"),
])
def test_bad_files_give_specific_errors(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ProbmutError, match=message) as error:
            read_population(path)
    assert str(path) in str(error.value)


def test_a_deepcrime_file_without_its_accuracy_row_is_refused(tmp_path):
    """Issue 57: a binary classifier's file cut before its accuracy row was read as one,
    its last row of 0/1 predictions becoming 20 "accuracies" (mean 0.5, killed)."""
    rows = ["true_label;" + ";".join(f"pred_label_model_{i}" for i in range(20))]
    rows += [f"{label};" + ";".join(str((label + i) % 2) for i in range(20)) for label in (0, 1)]
    path = tmp_path / "cut.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(ProbmutError, match=r"cut.csv: no accuracy row: DeepCrime's last row "
                                           r"starts with an empty cell.* starts with '1'"):
        read_population(path)
    path.write_text("\n".join(rows) + "\n;" + ";".join(["0.5"] * 20) + "\n")
    assert len(read_population(path)) == 20


def test_missing_file_names_it(tmp_path):
    with pytest.raises(ProbmutError, match="nothere.csv: no such file"):
        read_population(tmp_path / "nothere.csv")


def test_pair_aligns_and_reports_unpaired_ids():
    h = Population.from_values([0.9, 0.8, 0.7], ids=[0, 1, 2], name="h")
    m = Population.from_values([0.6, 0.5, 0.4], ids=[2, 1, 0], name="m")
    _, aligned = pair(h, m)
    assert aligned.values.tolist() == [0.4, 0.5, 0.6]
    with pytest.raises(ProbmutError, match=r"ids only in h: \[2\]; ids only in m: \[5\]"):
        pair(h, Population.from_values([0.6, 0.5, 0.4], ids=[0, 1, 5], name="m"))


# --- symptom records: failed instances, files without their columns ---------------

def test_failed_instances_are_dropped_with_a_warning_naming_them(tmp_path):
    path = tmp_path / "pop.csv"
    write_instances(path, [
        InstanceRecord(0, 0.9, 1),
        InstanceRecord(1, math.nan, 2, status="crashed", error="E: x, y"),
        InstanceRecord(2, 0.1, 3, status="diverged", constant=True), InstanceRecord(3, 0.92, 4),
        InstanceRecord(4, math.nan, 5, status="timed out")])
    with pytest.warns(FailedInstanceWarning,
                      match=r"1 \(crashed\), 2 \(diverged\), 4 \(timed out\)"):
        population = read_population(path)
    assert population.ids.tolist() == [0, 3] and population.values.tolist() == [0.9, 0.92]
    with pytest.raises(ProbmutError, match="failed instance"):
        read_population(path, strict=True)
    records = read_instances(path)
    assert [r.status for r in records] == ["ok", "crashed", "diverged", "ok", "timed out"]
    assert records[1].error == "E: x, y" and records[2].constant is True


def test_every_instance_failed_is_an_error_not_an_empty_population(tmp_path):
    path = tmp_path / "pop.csv"
    write_instances(path, [InstanceRecord(0, 0.1, status="diverged"),
                           InstanceRecord(1, 0.1, status="diverged")])
    with pytest.raises(ProbmutError, match="every instance failed"):
        read_population(path)


def test_files_without_symptom_columns_read_as_ok(tmp_path):
    (tmp_path / "old.csv").write_text("instance,accuracy,seed\n0,0.9,5\n1,0.8,6\n")
    records = read_instances(tmp_path / "old.csv")
    assert [(r.status, r.seed, r.constant) for r in records] == [("ok", 5, None), ("ok", 6, None)]
    (tmp_path / "bad.csv").write_text("instance,accuracy,status\n0,0.9,exploded\n")
    with pytest.raises(ProbmutError, match="unknown status 'exploded'"):
        read_population(tmp_path / "bad.csv")
