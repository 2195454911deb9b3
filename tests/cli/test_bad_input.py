"""Hostile input: every case of issue 8 ends in exit 0 with a sound answer or exit 2 with
one line naming the problem; --json output is strict JSON; a damaged cache is recomputed.

Each listed case is its own regression test; a property-based test drives the commands
with generated files and options.
"""

import json
import math
import subprocess
import sys
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from probmut.io.outcomes import save_outcomes

from ..conftest import FULL_RUN, RAW, damage_file, write_run

HEALTHY = RAW / "mnist" / "results_mnist_original.csv"
MUTANT = RAW / "mnist" / "results_mnist_delete_training_data_mutated0_MP_9.29.csv"
FUZZED = RAW / "mnist" / "results_mnist_weights_fuzzing_mutated0_MP_0.05_1.csv"
FAST = ["--bootstraps", "5", "--trials", "10"]



def strict_json(text: str):
    """Parse like a strict JSON reader: NaN and Infinity are not JSON."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)



def tidy(path, rows):
    path.write_text("instance,accuracy\n" + "".join(f"{i},{a}\n" for i, a in rows))
    return path


# --- wrong answers -------------------------------------------------------------------------

@pytest.mark.parametrize("argv, expected", [
    (["kill", "--model", "mnist_dc", "--mutation", "delete_training_data", "--magnitudes",
      "9.29", "--paper", "--alpha", "0.001"], "p rounded to 3 decimals < 0.001"),
    (["kill", "--model", "mnist_dc", "--mutation", "delete_training_data", "--magnitudes",
      "9.29", "--paper", "--round-p", "none"], "killed iff p < 0.05"),
    (["posterior", HEALTHY, MUTANT, "--paper", "--fit", "moments", "--no-plot", *FAST],
     "Beta fit: moment matching"),
    (["posterior", HEALTHY, MUTANT, "--paper", "--interval", "hdi", "--no-plot", *FAST],
     "95% interval: highest-density"),
    (["repeat", HEALTHY, MUTANT, "--paper", "--direction", "mutant-worse", "--repetitions",
      "2"], "and d >= 0.5"),
    (["mce", HEALTHY, MUTANT, "--paper", "--fit", "moments", "--repetitions", "3", *FAST,
      "--no-cache"],
     "Beta fit: moment matching"),
])
def test_an_explicit_flag_wins_over_paper(cli, argv, expected):
    code, out, err = cli(*argv)
    assert code == 0, err
    assert expected in out


def test_paper_with_an_explicit_alpha_no_longer_kills_at_p_0048(cli):
    code, out, _ = cli("kill", "--model", "mnist_dc", "--mutation",
                       "delete_training_data", "--magnitudes", "9.29", "--paper", "--alpha",
                       "0.001", "--json")
    document = strict_json(out)
    assert code == 0 and document["p_value"] == 0.048 and document["killed"] is False


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_ratio_threshold_must_be_a_positive_finite_number(cli, value):
    cli.refused("posterior", HEALTHY, MUTANT, "--threshold", value, "--no-plot",
            says="--threshold")


def test_repeat_paired_refuses_unpaired_ids(cli, tmp_path):
    healthy = tidy(tmp_path / "h.csv", [(i, 0.9 + i / 1000) for i in range(50)])
    mutant = tidy(tmp_path / "m.csv", [(i + 7, 0.8 + i / 1000) for i in range(50)])
    cli.refused("repeat", healthy, mutant, "--paired", says="ids only in")


@pytest.mark.parametrize("argv, says", [
    (["--sample", "-2"], "--sample: must be at least 2"),
    (["--repetitions", "-1"], "--repetitions: must be at least 1"),
    (["--repetitions", "0"], "--repetitions: must be at least 1"),
    (["--trials", "-1"], "--trials: must be at least 1"),
    (["--trials", "10000000000"], "--trials: must be at most"),
])
def test_repeat_refuses_impossible_counts(cli, argv, says):
    cli.refused("repeat", HEALTHY, MUTANT, *argv, says=says)


# --- strict JSON -----------------------------------------------------------------------------

def test_kill_on_two_different_constant_populations_prints_null_for_infinity(cli, tmp_path):
    healthy = tidy(tmp_path / "h.csv", [(i, 0.9) for i in range(5)])
    mutant = tidy(tmp_path / "m.csv", [(i, 0.8) for i in range(5)])
    code, out, _ = cli("kill", healthy, mutant, "--json")
    document = strict_json(out)
    assert code == 0 and document["killed"] is True and document["effect_size"] is None


@pytest.mark.parametrize("command, argv, says", [
    ("recommend", ["--certainty", "inf"], "--certainty"),
    ("recommend", ["--certainty", "0.5"], "--certainty"),
    ("recommend", ["--simulations", "nan"], "--simulations"),
    ("sample-size", ["--subpopulations", "nan"], "--subpopulations"),
    ("mce", ["--alpha", "nan"], "--alpha"),
    ("kill", ["--effect", "nan"], "effect must be a finite number in [0, inf), got nan (--effect)"),
])
def test_option_values_that_make_no_sense_are_refused(cli, command, argv, says):
    cli.refused(command, HEALTHY, MUTANT, *argv, says=says)


# --- one line, exit 2, never a traceback ---------------------------------------------------------

@pytest.mark.parametrize("command", ["posterior", "repeat", "mce", "sample-size", "recommend"])
def test_a_negative_seed_is_refused(cli, command):
    cli.refused(command, HEALTHY, MUTANT, "--seed", "-5", says="--seed: must be at least 0")


def test_an_unknown_option_points_at_the_help_of_its_command(cli):
    line = cli.refused("kill", HEALTHY, MUTANT, "--sample", "30", says="--sample 30")
    assert line.startswith("probmut kill: error:") and line.endswith("(see probmut kill --help)")


def test_an_instance_id_too_large_for_int64(cli, tmp_path):
    path = tidy(tmp_path / "big.csv", [(10**25, 0.9), (1, 0.91)])
    cli.refused("kill", path, MUTANT, says="instance id 10000000000000000000000000 is outside")


def test_a_csv_field_longer_than_the_csv_module_takes(cli, tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("instance,accuracy\n0," + "9" * 140_000 + "\n")
    cli.refused("kill", path, MUTANT, says="long.csv: not a readable CSV file")


MANIFESTS = {
    "unknown placeholder": ('pattern = "x_{foo}.csv"', "'pattern' must be a file name"),
    "unbalanced brace": ('pattern = "x_{magnitude}{.csv"', "not a valid file pattern"),
    "pattern of the wrong type": ("pattern = 5", "'pattern' must be a file name"),
    "magnitudes of the wrong type": ('magnitudes = "1,2"', "'magnitudes' must be a non-empty"),
    "no magnitudes": ("magnitudes = []", "'magnitudes' must be a non-empty"),
}


@pytest.mark.parametrize("case", MANIFESTS)
def test_malformed_mutation_tables_in_a_manifest(cli, tmp_path, case):
    line, says = MANIFESTS[case]
    spec = {"pattern": 'pattern = "x_{magnitude}.csv"', "magnitudes": 'magnitudes = ["1"]'}
    spec[line.split(" =")[0]] = line
    (tmp_path / "m.toml").write_text('[models.a]\nhealthy = "h.csv"\n[models.a.mutations.x]\n'
                                     + "\n".join(spec.values()) + "\n")
    cli.refused("kill", "--manifest", tmp_path / "m.toml", "--model", "a", "--mutation", "x",
            says=says)


@pytest.mark.parametrize("content, says", [
    ('[models.a]\nhealthy = 3\n', "'healthy' must be"),
    ('[models.a]\nhealthy = "h.csv"\nmutations = 3\n', "'mutations' must be a table"),
    ('[models]\na = 3\n', "[models.a] must be a table"),
    ('models = 3\n', "no [models.NAME] tables"),
])
def test_models_of_the_wrong_type_in_a_manifest(cli, tmp_path, content, says):
    (tmp_path / "m.toml").write_text(content)
    cli.refused("kill", "--manifest", tmp_path / "m.toml", "--model", "a", "--mutation", "x",
            says=says)


def test_a_manifest_path_that_is_a_directory(cli, tmp_path):
    cli.refused("kill", "--manifest", tmp_path, "--model", "a", "--mutation", "x",
            says="is a directory")


def _outcomes(tmp_path):
    good = tmp_path / "good.outcomes.npz"
    save_outcomes(good, range(20), np.ones((20, 30), bool), np.arange(30) % 10)
    return good


def _damaged_outcomes(tmp_path, case):
    path = tmp_path / f"{case}.npz"
    arrays = {"instance": np.arange(20), "n_inputs": 30,
              "correct": np.zeros((20, 4), np.uint8), "labels": np.arange(30)}
    if case == "float ids":
        arrays["instance"] = np.arange(20.0)
    elif case == "5 ids for 20 rows":
        arrays["instance"] = np.arange(5)
    elif case == "duplicate ids":
        arrays["instance"] = np.zeros(20, int)
    elif case == "bool outcomes":
        arrays["correct"] = np.zeros((20, 30), bool)
    if case == "plain npy":
        np.save(tmp_path / "plain.npy", np.arange(3))
        return tmp_path / "plain.npy"
    if case in ("empty", "truncated", "bit flip"):
        data = _outcomes(tmp_path).read_bytes()
        data = {"empty": b"", "truncated": data[: len(data) // 2],
                "bit flip": data[: len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF])
                + data[len(data) // 2 + 1:]}[case]
        path.write_bytes(data)
        return path
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("case", ["float ids", "5 ids for 20 rows", "duplicate ids",
                                  "bool outcomes", "plain npy", "empty", "truncated",
                                  "bit flip"])
def test_outcome_files_of_another_kind_or_damaged(cli, tmp_path, case):
    damaged = _damaged_outcomes(tmp_path, case)
    cli.refused("inputs", _outcomes(tmp_path), damaged,
            says=f"{damaged.name}: not a probmut outcomes file")


@pytest.mark.parametrize("argv, says", [
    (["--bootstraps", "100000000000"], "--bootstraps: must be at most"),
    (["--bootstraps", "1000000000"], "exceed the limit of 134,217,728"),
    (["--trials", "99999999999999999999"], "--trials: must be at most"),
])
def test_huge_counts_are_refused_before_allocating(cli, argv, says):
    cli.refused("posterior", HEALTHY, MUTANT, "--no-plot", *argv, says=says)


def test_a_figure_of_an_unknown_format(cli, tmp_path):
    cli.refused("posterior", HEALTHY, MUTANT, "--plot", tmp_path / "f.xyz",
            says="unknown figure format 'xyz'")


def test_a_figure_or_cache_where_nothing_can_be_written(cli, tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    cli.refused("posterior", HEALTHY, MUTANT, "--plot", blocker / "f.png",
            says="file.txt: is a file, not a directory")
    (tmp_path / "folder.png").mkdir()
    cli.refused("posterior", HEALTHY, MUTANT, "--plot", tmp_path / "folder.png",
            says="folder.png: is a directory")
    cli.refused("sample-size", HEALTHY, MUTANT, "--cache", blocker, "--sizes", "25",
            says="file.txt: is a file, not a directory")


def test_kill_rates_that_are_not_numbers(cli, tmp_path):
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    cli.refused("posterior", "--kill-rates", tmp_path / "text.npy", tmp_path / "text.npy",
            "--no-plot", says="holds <U1 values, not kill rates")


def test_output_into_a_closed_pipe_stops_quietly():
    mutants = " ".join(str(RAW / "mnist" / f"results_mnist_delete_training_data_mutated0_MP_{m}"
                                      ".csv") for m in ("3.1", "9.29", "12.38"))
    script = f"{sys.executable} -m probmut kill {HEALTHY} {mutants} --json | head -c 10"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True,
                            text=True)
    assert result.stdout == '{\n  "resul'
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


# --- messages name the file ----------------------------------------------------------------------

def test_a_population_too_small_is_named(cli, tmp_path):
    one = tidy(tmp_path / "one.csv", [(0, 0.9)])
    cli.refused("kill", HEALTHY, one, says="one.csv: 1 instance(s), fewer than the 2")
    line = cli.refused("posterior", HEALTHY, one, "--no-plot",
                   says="one.csv: 1 instance(s), fewer than the sample size k = 20")
    assert line.endswith("(--sample)")
    cli.refused("repeat", HEALTHY, one, says="one.csv: only 1 of its instances")
    other = tidy(tmp_path / "other.csv", [(0, 0.9)])  # one file twice is refused first
    cli.refused("repeat", one, other, says="one.csv: 1 instance(s); the sound and unknown "
                                               "pools need 20 each")


def test_mce_needs_two_repetitions(cli):
    cli.refused("mce", HEALTHY, MUTANT, "--repetitions", "1",
            says="--repetitions: must be at least 2")


# --- damaged caches ------------------------------------------------------------------------

def test_a_study_on_a_damaged_cache_gives_the_fresh_numbers(cli, tmp_path):
    argv = ["sample-size", HEALTHY, MUTANT, "--sizes", "25", "--subpopulations", "2",
            "--repetitions", "2", "--no-plot", "--json", "--cache", tmp_path, *FAST]
    code, fresh, _ = cli(*argv)
    assert code == 0
    for path in tmp_path.rglob("*.npz"):
        damage_file(path, "bit flip")
    code, again, err = cli(*argv)
    assert code == 0 and "damaged cache entry" in err
    assert strict_json(again)["sizes"] == strict_json(fresh)["sizes"]
    assert zlib.crc32(again.encode()) == zlib.crc32(fresh.encode())


# --- property-based: generated files and options ------------------------------------------------

CELLS = st.one_of(
    st.floats(0, 1).map(repr), st.sampled_from(["", "nan", "inf", "-0.5", "1.5", "abc", "0.9"]))
VALID = st.lists(st.floats(0, 1).map(repr), min_size=2, max_size=40).map(
    lambda values: list(enumerate(values)))
POPULATIONS = st.one_of(
    VALID, VALID, VALID,
    st.lists(st.tuples(st.integers(0, 60), CELLS), min_size=0, max_size=40),
    st.lists(st.tuples(st.integers(-5, 10**20), st.just("0.9")), max_size=5))
GOOD_OPTIONS = [["--paired"], ["--paper"], ["--seed", "7"], ["--alpha", "0.5"],
                ["--effect", "large"], ["--criterion", "welch"], ["--criterion", "mannwhitney"],
                ["--direction", "mutant-worse"], ["--round-p", "3"], ["--round-p", "none"]]
BAD_OPTIONS = [["--seed", "-1"], ["--alpha", "1"], ["--effect", "-1"], ["--round-p", "-4"],
               ["--threshold", "nan"], ["--threads", "0"], ["--jobs", "0"]]
OPTIONS = st.tuples(st.lists(st.sampled_from(GOOD_OPTIONS), max_size=3),
                    st.one_of(st.just([]), st.just([]), st.just([]),
                              st.sampled_from(BAD_OPTIONS).map(lambda bad: [bad]))).map(
    lambda parts: parts[0] + parts[1])
COMMANDS = {"kill": [], "posterior": ["--no-plot", "--sample", "2", *FAST],
            "repeat": ["--repetitions", "2", "--trials", "5", "--sample", "2"],
            "mce": ["--repetitions", "2", "--sample", "2", "--no-cache", *FAST],
            "sample-size": ["--subpopulations", "2", "--repetitions", "2", "--no-plot",
                            "--no-cache", "--sample", "2", *FAST],
            "recommend": ["--simulations", "10", "--sizes", "2,4", "--reference", "4", "--no-cache",
                          "--sample", "2", *FAST]}


def _numbers(document):
    if isinstance(document, dict):
        for value in document.values():
            yield from _numbers(value)
    elif isinstance(document, list):
        for value in document:
            yield from _numbers(value)
    elif isinstance(document, float):
        yield document


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(command=st.sampled_from(sorted(COMMANDS)), healthy=POPULATIONS, mutant=POPULATIONS,
       options=OPTIONS)
def test_any_files_and_options_give_exit_0_or_2_and_strict_json(cli, tmp_path, command,
                                                                 healthy, mutant, options):
    for name, rows in (("h.csv", healthy), ("m.csv", mutant)):
        (tmp_path / name).write_text("instance,accuracy\n"
                                     + "".join(f"{i},{a}\n" for i, a in rows))
    argv = [command, tmp_path / "h.csv", tmp_path / "m.csv", *COMMANDS[command],
            *[part for option in options for part in option], "--json"]
    code, out, err = cli(*argv)
    assert code in (0, 2), err
    assert "Traceback" not in err
    event(f"exit {code}")
    if code == 2:
        assert out == "" and len([line for line in err.splitlines() if ": error: " in line]) == 1
    else:
        document = strict_json(out)
        assert not any(math.isnan(value) for value in _numbers(document))


# --- issue 32: settings that were not used, options that cannot apply ---------------------------

def _saved_rates(tmp_path, bootstraps=7):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "base.npy", rng.binomial(100, 0.05, bootstraps) / 100)
    np.save(tmp_path / "mut.npy", rng.binomial(100, 0.6, (2, bootstraps)) / 100)
    return tmp_path / "base.npy", tmp_path / "mut.npy"


def test_posterior_on_saved_kill_rates_reports_the_files_settings(cli, tmp_path):
    """The number of bootstraps comes from the files (7 here, not the default 100); the
    kill test and its sample size were the saving run's, so the settings do not claim
    any ("20 vs 20 instances" was printed)."""
    base, mutants = _saved_rates(tmp_path)
    code, out, err = cli("posterior", "--kill-rates", base, mutants, "--no-plot")
    assert code == 0, err
    settings = out.splitlines()[-1]
    assert settings.startswith("settings: B=7 bootstraps x N=100 trials, from saved kill counts;")
    assert "vs" not in settings and "kill iff p" not in settings and "seed" not in settings
    code, out, _ = cli("posterior", "--kill-rates", base, mutants, "--no-plot", "--json")
    detail = strict_json(out)["settings_detail"]
    assert detail["bootstraps"] == 7 and "sample" not in detail and "criterion" not in detail


def test_mce_on_saved_kill_rates_reports_the_files_bootstraps(cli, tmp_path):
    np.save(tmp_path / "reps.npy", np.random.default_rng(1).binomial(100, 0.3, (5, 9)))
    code, out, _ = cli("mce", "--kill-rates", tmp_path / "reps.npy", "--json")
    document = strict_json(out)
    assert code == 0 and document["bootstraps"] == 9 and document["repetitions"] == 5
    assert document["settings"].startswith("B=9 bootstraps x N=100 trials, from saved")


@pytest.mark.parametrize("argv, says", [
    (["--bootstraps", "100"], "--bootstraps cannot apply to saved kill rates"),
    (["--sample", "10"], "--sample cannot apply"),
    (["--boot", "5", "--samp=10"], "--bootstraps, --sample cannot apply"),
    (["--seed", "42"], "--seed cannot apply"),
    (["--alpha", "0.01"], "--alpha cannot apply"),
    (["--criterion", "welch"], "--criterion cannot apply"),
    (["--paired"], "--paired cannot apply"),
])
def test_options_that_cannot_apply_to_saved_kill_rates_are_refused(cli, tmp_path, argv,
                                                                    says):
    base, mutants = _saved_rates(tmp_path)
    cli.refused("posterior", "--kill-rates", base, mutants, "--no-plot", *argv, says=says)


def test_mce_refuses_repetitions_with_saved_kill_rates(cli, tmp_path):
    np.save(tmp_path / "reps.npy", np.random.default_rng(1).binomial(100, 0.3, (5, 9)))
    cli.refused("mce", "--kill-rates", tmp_path / "reps.npy", "--repetitions", "7",
            says="--repetitions cannot apply to saved kill rates: their repetitions and "
                 "bootstraps are the file's rows and columns")


# --- issue 32: what was silently ignored or defaulted ----------------------------------------

@pytest.mark.parametrize("content, says", [
    ("instance,accuracy\n0,0.9\n1,0.91,0.5\n2,0.92\n", "line 3 holds 3 cells, the header 2"),
    ("instance,accuracy\n0,0.9\n1\n2,0.92\n", "line 3 holds 1 cell, the header 2"),
    ("instance,accuracy,accuracy\n0,0.9,0.1\n1,0.91,0.2\n",
     "the header has 2 columns named 'accuracy'"),
    ("instance,accuracy,instance\n0,0.9,5\n1,0.91,6\n",
     "the header has 2 columns named 'instance'"),
    ("true_label;pred_label_model_0;pred_label_model_1\n1;1;1\n1;1\n;0.9;0.8\n",
     "line 3 holds 2 cells, the header 3"),
], ids=["extra cell", "missing cell", "two accuracy columns", "two instance columns",
        "DeepCrime"])
def test_a_ragged_or_ambiguous_csv_is_refused_naming_the_line_or_column(cli, tmp_path,
                                                                         content, says):
    path = tmp_path / "pop.csv"
    path.write_text(content)
    cli.refused("kill", path, HEALTHY, says=f"pop.csv: {says}")


@pytest.mark.parametrize("argv, says", [
    (["posterior", HEALTHY, MUTANT, "--plot", "x.png", "--no-plot"],
     "give either --plot FILE or --no-plot, not both"),
    (["posterior", HEALTHY, MUTANT, "--names", "a", "--no-plot"],
     "--names cannot apply without --kill-rates"),
    (["sample-size", HEALTHY, MUTANT, "--sizes", "", "--no-plot"],
     "argument --sizes: expected comma-separated population sizes, got '' (an empty item)"),
    (["sample-size", HEALTHY, MUTANT, "--sizes", "10,,20", "--no-plot"],
     "got '10,,20' (an empty item)"),
    (["recommend", HEALTHY, MUTANT, "--sizes", "25,x"], "got '25,x'"),
    (["posterior", "--model", "mnist", "--mutation", "delete_training_data", "--magnitudes",
      "3.1,", "--no-plot"], "argument --magnitudes: expected comma-separated magnitudes"),
    (["replicate", "--only", "figure3,,deepcrime"], "argument --only"),
])
def test_contradictory_or_empty_options_are_refused(cli, argv, says):
    cli.refused(*argv, says=says)


# --- issue 32: the analysis commands' last tracebacks and misleading messages -----------------

def test_replicate_into_a_file_is_refused(cli, tmp_path):
    (tmp_path / "afile").write_text("")
    cli.refused("replicate", "--out", tmp_path / "afile", "--quick",
            says="afile: is a file, not a directory (the output)")


@pytest.mark.parametrize("argv, populations, option", [
    (["--sample", "5", "--sizes", "1000000000"], 100, "(--sizes)"),
    # the verdict's last block of reference populations: up to MORE_SIMULATIONS / 2 x simulations
    (["--sizes", "25", "--reference", "1000000000"], 400, "(--reference)"),
])
def test_recommend_refuses_huge_populations_before_allocating(cli, argv, populations,
                                                               option):
    line = cli.refused("recommend", HEALTHY, MUTANT, "--no-cache", *argv,
                   says=f"{populations} simulated populations of 1,000,000,000 instances per "
                        "side exceed the limit of 16,777,216")
    assert line.endswith(option)


def test_a_request_beyond_the_memory_is_one_line(cli, monkeypatch):
    import probmut.engine

    def too_large(*args, **kwargs):
        raise MemoryError("Unable to allocate 745. GiB for an array")

    monkeypatch.setattr(probmut.engine, "kill_counts", too_large)
    cli.refused("posterior", HEALTHY, MUTANT, "--no-plot",
            says="not enough memory (Unable to allocate 745. GiB for an array); ask for fewer")


@pytest.mark.parametrize("argv, says", [
    (["posterior", "--kill-rates", HEALTHY, HEALTHY, "--no-plot"],
     "a text file ('true_label;pred_label_model_0;pred_label'...), not a NumPy .npy array of "
     "kill rates; population files are given without --kill-rates"),
    (["mce", "--kill-rates", HEALTHY], "not a NumPy .npy array of kill rates"),
    (["inputs", HEALTHY, MUTANT], "not a probmut outcomes file (a text file: 'true_label;"),
    (["coverage", "nope"], "nope: no such file or directory"),
])
def test_a_file_of_another_kind_is_named_for_what_it_is(cli, argv, says):
    line = cli.refused(*argv, says=says)
    assert "allow_pickle" not in line


def test_recommend_help_shows_a_single_percent_sign(cli):
    out = cli.ok("recommend", "--help")
    assert "95%%" not in out and "predicted 95%" in " ".join(out.split())


def test_a_file_name_too_long_is_one_line(cli, tmp_path):
    """An operating-system error on a named file (here ENAMETOOLONG) is bad input."""
    long = tmp_path / ("x" * 300 + ".csv")
    cli.refused("kill", long, HEALTHY, says=f"{long}: File name too long")
    cli.refused("posterior", HEALTHY, MUTANT, *FAST, "--plot",
            tmp_path / ("x" * 300 + ".png"), says="File name too long")


def test_atomic_writes_take_every_name_the_file_system_takes(tmp_path):
    from probmut.errors import ProbmutError
    from probmut.io.atomic import atomic_write_text

    fits = tmp_path / ("y" * 250 + ".csv")  # its temporary name must fit too
    atomic_write_text(fits, "ok")
    assert fits.read_text() == "ok"
    with pytest.raises(ProbmutError, match="the file name or path is too long for the file "
                                           "system .a 304-byte name.; choose a shorter one"):
        atomic_write_text(tmp_path / ("y" * 300 + ".csv"), "no")
    assert [p.name for p in tmp_path.iterdir()] == [fits.name]



def test_an_error_names_the_option_as_the_command_calls_it():
    """A library error names its setting (recommend's ``simulations``, train's ``round_size``);
    the command line names the flag that holds it, not a flag it does not have."""
    from probmut.cli.main import _flag_of, _parse, build_parser

    parser = build_parser()
    recommend = _parse(parser, ["recommend", str(HEALTHY), str(MUTANT)])
    assert _flag_of(recommend, "simulations") == "--simulations"
    assert _flag_of(recommend, "certainty") == "--certainty"
    assert _flag_of(_parse(parser, ["train"]), "round_size") == "--round"


# --- issue 44: nothing counted twice, nothing read forever, messages that say what it is ------

def _manifest_of(tmp_path, magnitudes: str, bom: bool = False):
    """A manifest of model a, mutation x at ``magnitudes`` (a TOML list), each magnitude's
    file a copy of MUTANT."""
    for magnitude in ("weak", "strong", "10", "010"):
        (tmp_path / f"x_{magnitude}.csv").write_bytes(MUTANT.read_bytes())
    text = (f'[models.a]\nhealthy = "{HEALTHY}"\n[models.a.mutations.x]\n'
            f'pattern = "x_{{magnitude}}.csv"\nmagnitudes = {magnitudes}\n')
    path = tmp_path / "m.toml"
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode())
    return ["--manifest", path, "--model", "a", "--mutation", "x"]


@pytest.mark.parametrize("magnitudes, says", [
    ('["weak", "strong", "strong", "strong"]', "magnitude 'strong' is given 3 times; list each "
                                               "magnitude once"),
    ('["10", "010"]', "magnitude '10' and '010' are the same number"),
    ("[10, 10.0]", "magnitude '10' and '10.0' are the same number"),
])
def test_a_magnitude_listed_twice_in_a_manifest_is_refused(cli, tmp_path, magnitudes, says):
    """It was counted again: 4 mutants and a score of 0.781 where 2 gave 0.571."""
    for command in ("kill", "posterior"):
        cli.refused(command, *_manifest_of(tmp_path, magnitudes), "--no-plot"
                if command == "posterior" else "--json", says=says)


def test_a_run_never_lists_one_magnitude_under_two_spellings(tmp_path):
    """``train --mutation op:10`` into a run that has ``op:010``: the same mutant, which
    would train again with other seeds."""
    from probmut.errors import ProbmutError
    from probmut.io.manifest import Manifest, add_to_manifest

    path = tmp_path / "manifest.toml"
    add_to_manifest(path, "m", "healthy.csv", "a run", [("x", "010", False)])
    add_to_manifest(path, "m", "healthy.csv", "a run", [("x", "010", False)])  # a resume
    with pytest.raises(ProbmutError, match="x holds the magnitude '010', the same as '10': "
                                           "give it as 010"):
        add_to_manifest(path, "m", "healthy.csv", "a run", [("x", "10", False)])
    assert Manifest.load(path).mutation("m", "x").magnitudes == ("010",)


def test_a_population_given_twice_is_refused(cli, tmp_path):
    cli.refused("posterior", HEALTHY, MUTANT, MUTANT, "--no-plot", *FAST,
            says=f"{MUTANT} is given twice; give each population file once")
    again = tmp_path / "again.csv"
    again.symlink_to(MUTANT)
    cli.refused("kill", HEALTHY, MUTANT, again,
            says=f"{MUTANT} and {again} are the same file")
    cli.refused("kill", "--model", "mnist", "--mutation", "delete_training_data",
            "--magnitudes", "3.1,9.29,3.1", says="magnitude '3.1' is given 2 times; give each "
                                                  "magnitude once (--magnitudes)")


def test_a_device_given_as_a_population_is_refused_at_once(cli):
    cli.refused("kill", HEALTHY, "/dev/zero",
            says="/dev/zero: a device, not a regular file; give a population CSV file")


def test_a_manifest_with_a_byte_order_mark_is_read(cli, tmp_path):
    code, out, err = cli("kill", *_manifest_of(tmp_path, '["weak"]', bom=True))
    assert code == 0 and "weak" in out, err


def test_a_population_file_given_for_a_run_is_named_as_one(cli):
    cli.refused("symptoms", HEALTHY, "--no-plot",
            says=f"{HEALTHY}: a population file, not a manifest; give a run's folder or its "
                 "manifest.toml")


def test_a_full_disk_is_one_line_naming_the_file(cli, tmp_path, full_disk):
    """OSError 28 ended posterior --plot and report --out in a traceback."""
    full_disk(f"{tmp_path}/")
    figure = tmp_path / "figure.png"
    cli.refused("posterior", HEALTHY, MUTANT, *FAST, "--plot", figure,
            says=f"{figure}: cannot write it: No space left on device; free some space and try "
                 "again, or write elsewhere")
    assert not list(tmp_path.iterdir())  # nothing half-written
    run_folder = write_run(tmp_path.parent / f"{tmp_path.name}_run", FULL_RUN)
    page = tmp_path / "page.html"
    line = cli.refused("report", run_folder, "--sample", "5", "--bootstraps", "10",
                   "--trials", "10", "--no-verdicts", "--quiet", "--out", page,
                   says=f"{page}: cannot write it: No space left on device")
    assert not list(tmp_path.iterdir())
    assert "completed work is kept" not in line  # nothing to resume


def test_a_full_disk_under_a_cache_is_a_warning(cli, tmp_path, full_disk):
    """recommend's cache only saves time: the results still come, with one warning."""
    full_disk(str(tmp_path))
    code, out, err = cli("recommend", HEALTHY, MUTANT, "--pilot", "25", "--sizes", "25",
                         "--simulations", "20", *FAST, "--cache", tmp_path / "cache")
    assert code == 0 and "verdict:" in out, err
    warned = [line for line in err.splitlines() if "warning" in line]
    assert len(warned) == 1 and "No space left on device; the cache in" in warned[0], err


def test_repeat_with_pools_of_k_warns_once(cli, tmp_path):
    """Every test of a repetition was the same test, without a word (issue 44); the
    warning names the healthy pools once, not once per population."""
    rng = np.random.default_rng(3)
    healthy = tidy(tmp_path / "h.csv", enumerate(rng.normal(0.9, 0.01, 40)))
    mutants = [tidy(tmp_path / f"m{j}.csv", enumerate(rng.normal(0.89, 0.01, 40)))
               for j in range(2)]
    code, out, err = cli("repeat", healthy, *mutants, "--repetitions", "2",
                         "--trials", "5")
    assert code == 0 and "pass rate" in out
    assert err.splitlines() == [
        f"probmut: warning: {healthy}: pools of 20 sound and 20 unknown instances for samples "
        "of k = 20: every test of a repetition draws the same instances, so it is one test "
        "repeated and its pass rate is 0 or 1; train more instances or lower the sample size k"]


def test_a_symlink_loop_is_named_as_one(cli, tmp_path):
    """It said "no such file" (issue 44); the check for a file given twice must not trip
    on it either (pathlib's resolve() raises on a loop)."""
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    (tmp_path / "manifest.toml").write_text('[models.m]\nhealthy = "h.csv"\n[models.m.targets]\n'
                                            '"loop.csv" = 4\n')  # a run's manifest beside it
    cli.refused("kill", HEALTHY, loop,
            says=f"{loop}: a symbolic link that leads back to itself (a symlink loop)")
