"""probmut evaluate: what it refuses, what it says of models that cannot be scored (its
scores of a trained run's saved models, equal to train's: tests/train/test_instance.py,
which trains that run once)."""

import json

import pytest

from probmut.io.populations import read_instances

pytestmark = pytest.mark.train


@pytest.fixture
def model_folder(tmp_path):
    """A folder of two files named as models (their content is not read before the
    checks below)."""
    folder = tmp_path / "models" / "healthy"
    folder.mkdir(parents=True)
    for i in range(2):
        (folder / f"{i:05d}.keras").write_bytes(b"PK")
    return folder


@pytest.mark.parametrize("argv, says", [
    (["{m}/00000.keras", "{m}/00000.keras", "--out", "{t}/p.csv"],
     "{m}/00000.keras: given twice; each model file is one instance, name it once"),
    (["{m}", "{m}/00001.keras", "--out", "{t}/p.csv"], "{m}/00001.keras: given twice"),
    (["{m}/00000.keras", "{m}/../healthy/00000.keras", "--out", "{t}/p.csv"],
     "{m}/../healthy/00000.keras: given twice (as {m}/00000.keras)"),
    (["{m}/00000.keras", "--out", "{t}"],
     "{t}: is a directory; give a file name for the population file (--out)"),
    (["{m}/00000.keras", "--out", "{t}/" + "p" * 300 + ".csv"], "File name too long"),
    (["{m}/00000.keras", "--out", "{t}/" + "p" * 246 + ".csv"],
     "p.outcomes.npz: File name too long"),  # the CSV's name fits, its outcomes file's not
    (["{m}", "--write-manifest", "{t}"],
     "{t}: is a directory; give a file name for the manifest (--write-manifest)"),
    # --manifest: its name before 0.2.0
    (["{m}", "--manifest", "{t}"], "one of the arguments --out --write-manifest is required"),
])
def test_evaluate_refuses_what_it_cannot_score_or_write(tmp_path, cli, model_folder, argv, says):
    pytest.importorskip("tensorflow")
    fill = {"m": model_folder, "t": tmp_path}
    error = cli.refused("evaluate", *(a.format(**fill) for a in argv), "--dataset", "digits",
                        says=says.format(**fill))
    assert error.startswith("probmut evaluate: error: ")
    assert not list(tmp_path.glob("p*"))  # nothing written


@pytest.mark.parametrize("content, says", [
    (b"", "the file is empty"),
    (b"random bytes, not a zip archive",
     "not a .keras model (a .keras file is a zip archive; this one is damaged or another kind "
     "of file)"),
])
def test_evaluate_says_what_is_wrong_with_a_damaged_model_file(tmp_path, cli, content, says):
    pytest.importorskip("tensorflow")
    model = tmp_path / "m.keras"
    model.write_bytes(content)
    ran = cli("evaluate", model, "--dataset", "digits", "--out", tmp_path / "p.csv", "--quiet")
    assert ran.code == 1  # a model that cannot be scored is a crashed instance
    assert f"1 model failed (recorded in the population files):\n  {model}: crashed: {says}" \
        in ran.err
    assert [(r.status, r.error) for r in read_instances(tmp_path / "p.csv")] == [("crashed", says)]


def test_evaluate_says_how_many_failed_and_over_how_many_the_mean_is(tmp_path, cli):
    """'5 instances, mean accuracy 0.9' with 4 of 5 crashed, and 'nan' when all did
    (issue 44): the count that failed, how, and the instances the mean is over."""
    pytest.importorskip("tensorflow")
    from probmut.train.datasets import load_dataset
    from probmut.train.models import MODELS

    folder = tmp_path / "models"
    folder.mkdir()
    for i in (1, 2):
        (folder / f"{i:05d}.keras").write_bytes(b"")  # crashes when loaded
    evaluate = ["evaluate", folder, "--dataset", "digits", "--quiet", "--out"]
    ran = cli(*evaluate, tmp_path / "none.csv")
    assert ran.code == 1 and ran.out == (f"{tmp_path}/none.csv: 2 instances, all failed (2 "
                                         "crashed): no accuracy to average, on 450 test "
                                         "inputs of digits\n")
    MODELS["digits_cnn"].build(load_dataset("digits").dims).save(folder / "00000.keras")
    ran = cli(*evaluate, tmp_path / "p.csv", "--json")
    assert ran.code == 1
    document = json.loads(ran.out)
    assert (document["instances"], document["scored"]) == (3, 1)
    accuracy = read_instances(tmp_path / "p.csv")[0].accuracy
    assert document["accuracy_mean"] == accuracy  # the one scored
    ran = cli(*evaluate, tmp_path / "p.csv")
    assert ran.code == 1 and ran.out == (f"{tmp_path}/p.csv: 3 instances, 2 failed (2 crashed), "
                                         f"mean accuracy {accuracy:.6g} over the 1 scored, on "
                                         "450 test inputs of digits\n")


def test_models_of_one_architecture_share_one_model_object_with_each_files_weights(tmp_path):
    """load_model builds a population's architecture once and then loads only weights: each
    file still gives its own weights and outputs, and a file whose weights are damaged is
    loaded in full, so its error is Keras' own."""
    keras = pytest.importorskip("keras")
    import zipfile

    import numpy as np

    from probmut.train import evaluate

    files, weights = [], []
    for i in range(3):
        keras.backend.clear_session()  # the same names: the same architecture
        keras.utils.set_random_seed(i)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        files.append(tmp_path / f"{i:05d}.keras")
        model.save(files[-1])
        weights.append(model.get_weights())
    evaluate._LastModel.config = evaluate._LastModel.model = None
    loaded = [evaluate.load_model(path) for path in files[:2]]
    assert loaded[0] is loaded[1]  # one object: the second file loaded only its weights
    for path, expected in zip(files, weights, strict=True):
        got = evaluate.load_model(path).get_weights()
        assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    damaged = tmp_path / "damaged.keras"
    with zipfile.ZipFile(files[0]) as source, zipfile.ZipFile(damaged, "w") as target:
        for name in source.namelist():
            target.writestr(name, b"not HDF5" if name.endswith(".h5") else source.read(name))
    with pytest.raises(Exception) as reused:
        evaluate.load_model(damaged)
    evaluate._LastModel.config = evaluate._LastModel.model = None
    with pytest.raises(Exception) as fresh:
        evaluate.load_model(damaged)
    assert str(reused.value) == str(fresh.value)
