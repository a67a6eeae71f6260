"""Experiment files with ``kind = "activations"`` over the files users already have besides a
``torch.save``'d dict: a ``.safetensors`` file of hook-named tensors, and folders (or patterns
of files) of one ``<hook name>.safetensors``/``.npy``/``.npz``/``.parquet`` per hook. The same
tensors written in every format give exactly the arrays of the ``torch.save``'d dict; a
``{i}`` pattern over a folder is a layer sweep; each bad folder is one clear problem; the
checks read headers only; and a folder of safetensors runs end to end."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from activation_fixtures import (
    ENTRY,
    HOOKS,
    assert_one_clear_problem,
    assert_sweep_of_hooks,
    run_curve_names,
)
from safetensors.torch import save_file

from probemeter.cli.main import main
from probemeter.runs.config import load_experiment
from probemeter.runs.kinds import activations
from probemeter.runs.runner import prepare_data

PATTERN = "blocks.{i}.hook_resid_post"


def _tensors(rows: int, seed: int, positions: int | None) -> dict[str, torch.Tensor]:
    """Float64 activations (rows, positions, 3), or (rows, 3) when ``positions`` is None, of
    three hooks (so every format's float32 rounding is compared), and labels; layer i
    informative in proportion to i."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(rows) % 2
    shape = (rows, 3) if positions is None else (rows, positions, 3)
    tensors = {}
    for i, hook in enumerate(HOOKS):
        tensor = torch.randn(*shape, generator=generator, dtype=torch.float64)
        tensor[..., 0] += (labels * i).view(rows, *([1] * (len(shape) - 2)))
        tensors[hook] = tensor
    return {**tensors, "labels": labels}


def _write(fmt: str, tensors: dict[str, torch.Tensor], base) -> str:
    """``tensors`` written as format ``fmt`` at ``base`` (a file stem or folder); the value
    of ``train``/``test`` that reads them."""
    hooks = {key: value for key, value in tensors.items() if key != "labels"}
    labels = tensors["labels"]
    if fmt == "pt":
        torch.save(tensors, f"{base}.pt")
        return f"{base.name}.pt"
    if fmt == "safetensors-file":
        save_file(tensors, f"{base}.safetensors")
        return f"{base.name}.safetensors"
    base.mkdir()
    for hook, tensor in hooks.items():
        if fmt in ("safetensors", "glob"):
            save_file({"activations": tensor}, base / f"{hook}.safetensors")
        elif fmt == "npy":
            np.save(base / f"{hook}.npy", tensor.numpy())
        elif fmt == "npz":  # the labels in each file, the array under the hook's name
            np.savez(base / f"{hook}.npz", **{hook: tensor.numpy(), "labels": labels.numpy()})
        elif fmt == "parquet":  # one column per feature, labels in column "label"
            columns = {f"f{j}": tensor[:, j].numpy() for j in range(tensor.shape[1])}
            pq.write_table(pa.table({**columns, "label": labels.numpy()}), base / f"{hook}.parquet")
    if fmt not in ("npz", "parquet"):
        np.save(base / "labels.npy", labels.numpy())
    (base / "notes.txt").write_text("not an activation file")
    return f"{base.name}/*.safetensors" if fmt == "glob" else base.name


def _experiment(folder, fmt: str, hooks: str = PATTERN, extra: str = "", positions=4):
    """Train (40 rows) and test (20 rows) in format ``fmt``, and the entry reading them
    (``attention_mask = "unpadded"`` where they have positions: every one a real token)."""
    train = _write(fmt, _tensors(40, 0, positions), folder / "train")
    test = _write(fmt, _tensors(20, 1, positions), folder / "test")
    if positions is not None:
        extra = f'attention_mask = "unpadded"\n{extra}'

    path = folder / f"{fmt}.toml"
    path.write_text(ENTRY.format(train=train, test=test, hooks=hooks, extra=extra))
    return path


@pytest.mark.parametrize("fmt", ["safetensors-file", "safetensors", "glob", "npy", "npz"])
def test_each_format_reads_exactly_the_arrays_of_the_torch_dict(tmp_path, fmt):
    (tmp_path / "pt").mkdir()
    (tmp_path / fmt).mkdir()
    reference = prepare_data(
        load_experiment(_experiment(tmp_path / "pt", "pt", extra="position = 1"))
    )
    experiment = load_experiment(_experiment(tmp_path / fmt, fmt, extra="position = 1"))
    reps = experiment.representations
    assert_sweep_of_hooks(reps)
    data = prepare_data(experiment)
    for name, expected in reference.items():
        for field in ("X_train", "y_train", "X_test", "y_test"):
            np.testing.assert_array_equal(getattr(data[name], field), getattr(expected, field))
        assert data[name].X_train.dtype == np.float32


def test_parquet_tables_read_exactly_the_arrays_of_the_torch_dict(tmp_path):
    (tmp_path / "pt").mkdir()
    (tmp_path / "parquet").mkdir()
    path = _experiment(tmp_path / "pt", "pt", hooks=HOOKS[2], positions=None)
    reference = prepare_data(load_experiment(path))["resid"]
    path = _experiment(tmp_path / "parquet", "parquet", hooks=HOOKS[2], positions=None)
    (rep,) = load_experiment(path).representations
    assert (rep.name, rep.sweep, rep.options["hook"]) == ("resid", None, HOOKS[2])
    data = prepare_data(load_experiment(path))["resid"]
    for field in ("X_train", "y_train", "X_test", "y_test"):
        np.testing.assert_array_equal(getattr(data, field), getattr(reference, field))


def test_string_labels_from_the_folders_labels_npy(tmp_path):
    path = _experiment(tmp_path, "npy", hooks=HOOKS[1], extra='labels = "encode"')
    for split, rows in (("train", 40), ("test", 20)):
        np.save(tmp_path / split / "labels.npy", np.array(["no", "yes"])[np.arange(rows) % 2])
    data = prepare_data(load_experiment(path))["resid"]
    assert data.classes == ("no", "yes")
    np.testing.assert_array_equal(data.y_test, np.arange(20) % 2)


def test_the_unit_key_of_a_torch_dict_is_unchanged_and_a_folders_names_it(tmp_path):
    """The key of (n, positions, d) activations declared ``"unpadded"`` is the key they had
    before an attention mask could be named (the same features); a named mask enters it."""
    path = _experiment(tmp_path, "pt", hooks=HOOKS[0])
    (rep,) = load_experiment(path).representations
    assert rep.options["attention_mask"] == "unpadded"
    assert rep.key_dict() == {
        "name": "resid", "kind": "activations", "view": None, "n_components": None,
        "train": str(tmp_path / "train.pt"), "test": str(tmp_path / "test.pt"),
        "hooks": HOOKS[0], "position": -1, "labels": "indices", "hook": HOOKS[0],
    }  # fmt: skip
    (tmp_path / "glob").mkdir()
    (rep,) = load_experiment(_experiment(tmp_path / "glob", "glob", hooks=HOOKS[0])).representations
    assert rep.key_dict()["train"] == str(tmp_path / "glob" / "train" / "*.safetensors")


def test_the_checks_read_headers_only(tmp_path, monkeypatch):
    """``load_experiment`` (hence ``--check``'s up-front problems and the pool's rows)
    never calls a reader of data."""

    def refused(*args):
        raise AssertionError("data read while checking")

    for reader in ("_safetensors_read", "_npz_read", "_parquet_features", "_parquet_labels"):
        monkeypatch.setattr(activations, reader, refused)
    for fmt in ("safetensors", "npz", "parquet"):
        (tmp_path / fmt).mkdir()
        positions = None if fmt == "parquet" else 4
        reps = load_experiment(
            _experiment(tmp_path / fmt, fmt, positions=positions)
        ).representations
        assert len(reps) == 3


def _bad(folder, case):
    """The folders of one bad input (train and test as npy folders, then spoiled) and the
    entry's hooks."""
    path = _experiment(folder, "npy")
    train, test = folder / "train", folder / "test"
    if case == "no-activation-files":
        for hook in HOOKS:
            (train / f"{hook}.npy").unlink()
        (train / "acts.csv").write_text("x\n")
    elif case == "pattern-matches-nothing":
        text = path.read_text().replace('train = "train"', 'train = "train/*.safetensors"')
        path.write_text(text)
    elif case == "same-hook-twice":
        save_file({"x": torch.zeros(40, 4, 3)}, train / f"{HOOKS[1]}.safetensors")
    elif case == "test-lacks-hooks":
        for hook in HOOKS[1:]:
            (test / f"{hook}.npy").unlink()
    elif case == "non-numeric-parquet":
        columns = {"f0": np.zeros(40), "word": ["w"] * 40, "label": np.arange(40) % 2}
        (train / f"{HOOKS[0]}.npy").unlink()
        pq.write_table(pa.table(columns), train / f"{HOOKS[0]}.parquet")
    elif case == "unreadable-parquet":
        (train / f"{HOOKS[0]}.npy").unlink()
        (train / f"{HOOKS[0]}.parquet").write_bytes(b"not a Parquet file")
    elif case == "mismatched-shapes":
        np.save(test / f"{HOOKS[2]}.npy", np.zeros((20, 4, 5)))
    elif case == "labels-twice":
        (train / f"{HOOKS[0]}.npy").unlink()
        np.savez(train / f"{HOOKS[0]}.npz", X=np.zeros((40, 4, 3)), labels=np.arange(40) % 2)
    elif case == "no-labels":
        (test / "labels.npy").unlink()
    elif case == "labels-per-row":
        np.save(train / "labels.npy", np.arange(30) % 2)
    elif case == "several-arrays":
        (train / f"{HOOKS[0]}.npy").unlink()
        np.savez(train / f"{HOOKS[0]}.npz", a=np.zeros((40, 4, 3)), b=np.zeros((40, 4, 3)))
    return path


PROBLEMS = {
    "no-activation-files": r"\.train: '.*train' holds no activation files \(one per hook: "
    r"<hook name>\.safetensors, \.npy, \.npz or \.parquet\); it holds acts\.csv, labels\.npy, "
    r"notes\.txt$",
    "pattern-matches-nothing": r"\.train: '.*train/\*\.safetensors' matches no activation files "
    r".*; it matches no files$",
    "same-hook-twice": r"\.train: '.*train' holds hook 'blocks\.1\.hook_resid_post' twice, "
    r"blocks\.1\.hook_resid_post\.npy and blocks\.1\.hook_resid_post\.safetensors: keep one$",
    "test-lacks-hooks": r"\.test: lacks hooks 'blocks\.1\.hook_resid_post', "
    r"'blocks\.2\.hook_resid_post' of train$",
    "non-numeric-parquet": r"\.train: '.*blocks\.0\.hook_resid_post\.parquet' has non-numeric "
    r"columns word \(string\): every column but \"label\" is a feature",
    "unreadable-parquet": r"\.train: '.*blocks\.0\.hook_resid_post\.parquet' cannot be read as "
    r"a Parquet table \(.+\)$",
    "mismatched-shapes": r"\.test: hook 'blocks\.2\.hook_resid_post' has shape \(20, 4, 5\) but "
    r"train \(40, 4, 3\)",
    "labels-twice": r"\.train: '.*blocks\.0\.hook_resid_post\.npz' holds labels and "
    r"'.*train/labels\.npy' exists too: keep one of them$",
    "no-labels": r"\.test: '.*test' has no labels: put labels\.npy in '.*test', or save them "
    r"with each hook",
    "labels-per-row": r"\.train: '.*train' has labels of shape \(30,\) for hook "
    r"'blocks\.0\.hook_resid_post' of 40 rows: give one label per row$",
    "several-arrays": r"\.train: '.*blocks\.0\.hook_resid_post\.npz' holds a, b: save one "
    r"array \(and \"labels\"\), or name it 'blocks\.0\.hook_resid_post'$",
}


@pytest.mark.parametrize("case", list(PROBLEMS))
def test_each_bad_folder_is_one_clear_problem(tmp_path, capsys, case):
    path = _bad(tmp_path, case)
    assert_one_clear_problem(path, PROBLEMS[case], capsys)


def test_a_folder_of_safetensors_runs_end_to_end(tmp_path):
    path = _experiment(tmp_path, "safetensors")
    out = tmp_path / "runs"
    assert main(["run", str(path), "--check"]) == 0
    assert run_curve_names(path, out) == ["resid-0", "resid-1", "resid-2"]
