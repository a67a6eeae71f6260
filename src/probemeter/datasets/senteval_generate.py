"""SentEval probing tasks generated from any raw text (silver labels from a spaCy pipeline).

:func:`generate_tasks` builds eight of SentEval's ten probing tasks (Conneau et al. 2018, "What
you can cram into a single $&!#* vector", ACL 2018, arXiv:1805.01070, §2 and App.; Zhu et al.
2022, §4) from tokenised sentences of any corpus and writes them in the release's format
(:mod:`probemeter.datasets.senteval`), so a domain's own text can be probed the same way. The
recipe (:class:`Recipe`; Conneau et al. build theirs from the Toronto Book Corpus with the
Stanford parser):

* every task uses the sentences whose word count falls in one of ``Recipe.length_bins``
  (default 5–28 words, as the release), each distinct sentence once;
* **SentLen**: the label is the index of the length bin (0–5 by default);
* **WC**: the ``wc_words`` word forms ranked after the ``wc_skip_top`` most frequent forms
  (by the number of sentences holding them; alphabetic forms only). The default is the
  release's: 1,000 mid-frequency words, ranks 2,001–3,000 (Conneau et al. §2: "the words with
  ranks between 2k and 3k when sorted by frequency"), ``wc_per_word`` = 120 sentences each
  (100 / 10 / 10 per word, the release's 100k / 10k / 10k over 1,000 words). A sentence
  qualifies when it holds exactly one of the chosen words, exactly once, which is its label;
  while some word has fewer than ``wc_per_word`` qualifying sentences, the one with fewest is
  dropped (which frees sentences for the others; the metadata records how many words were
  kept); the remaining words keep ``wc_per_word`` sentences each;
* **TreeDepth**: the depth of the *dependency* tree (nodes on the longest root-to-word path;
  the release uses constituency trees), classes ``tree_depths``; decorrelated from length by
  keeping, within each length bin, as many sentences of each depth as the rarest depth has;
* **BShift**: in half of the sentences (label ``I``) two adjacent different alphabetic words at
  a random position are inverted (Conneau et al.: "two random consecutive words inverted");
  the other half (``O``) are unchanged. The first word is never moved: an inverted first pair
  would put a lower-case word first and the sentence's capital second ("cat The sat"), a cue
  that needs no syntax;
* **Tense**: ``PAST`` / ``PRES`` from the fine-grained tag of the root verb (``VBD`` versus
  ``VBP``/``VBZ``: a finite main verb; sentences with another root are skipped);
* **SubjNum** / **ObjNum**: ``NN`` / ``NNS`` from the tag of the root's nominal subject
  (``nsubj``/``nsubjpass``) or direct object (``dobj``), common nouns only;
* **CoordInv**: sentences of two coordinated clauses (the root and a ``conj`` verb with its
  own subject, joined by a ``cc`` word; the second clause is the conjunct's subtree, every word
  from after the ``cc`` word to the last word, where the subtree may hold the final
  punctuation, as spaCy attaches it to the conjunct); in half of them (``I``) the order of the
  two clauses is inverted, the rest (``O``) kept. The punctuation between the clauses (", but")
  and at the end of the sentence stays where it is, and the case is fixed at the new sentence
  boundary: when the sentence begins with a capital, the new first word is capitalised and the
  old first word lower-cased, unless it is a proper noun (tag ``NNP``/``NNPS`` or UPOS
  ``PROPN``), "I" or written in capitals ("They might be memories , but I can feel each one ."
  becomes "I can feel each one , but they might be memories ."); so the original and the
  inverted class start alike. Sentences that begin with punctuation, whose clauses begin with
  punctuation, or whose quotes or brackets span both clauses are left out (their inversion
  would show in the punctuation alone).

TopConst needs a constituency parser and SOMO a language model to choose the replacement
word: neither is generated (asking for them is a ValueError saying so).

Classes are balanced by random downsampling within each split; at most ``max_per_form``
sentences share one target word (the root verb, subject or object noun) per class, and for
Tense, SubjNum and ObjNum each target word form goes to one split only (as the release keeps
them apart). Each split is ``te_fraction`` / ``va_fraction`` / the rest of each class (default
1/12, 1/12, 10/12: the release's 10k / 10k / 100k), and no split holds more sentences than
``split_sizes`` allows (default the release's 100,000 / 10,000 / 10,000 per task). The
release's recipe is the default (:data:`RELEASE_RECIPE`); any other value is a deviation,
which :meth:`Recipe.deviations` names and the metadata file records. Each task draws from its
own random stream (``random_state`` and the task's position in
:data:`~probemeter.datasets.senteval.TASK_FILES`), so a task's file does not depend on which
other tasks are generated. The labels are **silver**: the parser's decisions, not gold.

References:
    Conneau, A., Kruszewski, G., Lample, G., Barrault, L. & Baroni, M. (2018). What you can cram
    into a single $&!#* vector: probing sentence embeddings for linguistic properties. *ACL 2018*.
    doi:10.18653/v1/P18-1198 (arXiv:1805.01070)

    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from probemeter._io import write_text_atomic
from probemeter._validation import check_scalar
from probemeter.datasets.senteval import SPLITS, TASK_FILES, write_senteval

__all__ = [
    "CUE_SAMPLE",
    "GENERATED_TASKS",
    "METADATA_FILE",
    "RELEASE_RECIPE",
    "Recipe",
    "generate_tasks",
    "read_sentences",
    "tree_depth",
]

#: the tasks :func:`generate_tasks` can build, in the release's order
GENERATED_TASKS = ("SentLen", "WC", "TreeDepth", "BShift", "Tense", "SubjNum", "ObjNum", "CoordInv")
#: what generation records beside the task files: recipe, pipeline, counts
METADATA_FILE = "senteval-generation.json"
_NOT_GENERATED = {
    "TopConst": "it needs a constituency parser (the top constituents below the root)",
    "SOMO": "it needs a language model to pick a plausible replacement word",
}
_PARSED_TASKS = ("TreeDepth", "Tense", "SubjNum", "ObjNum", "CoordInv")
#: tasks defined by word order alone, whose surface the metadata checks for cues
_ORDER_TASKS = ("BShift", "CoordInv")
#: the most sentences of a task the surface-cue check reads (a seeded sample of them)
CUE_SAMPLE = 10_000
_CUE_MINIMUM = 25
_TENSES = {"VBD": "PAST", "VBP": "PRES", "VBZ": "PRES"}
_NUMBERS = {"NN": "NN", "NNS": "NNS"}
_SUBJECTS = ("nsubj", "nsubjpass")


@dataclass(frozen=True)
class Recipe:
    """How :func:`generate_tasks` builds the tasks (see the module docstring for each task).

    The defaults are the release's definitions (Conneau et al. 2018, arXiv:1805.01070, §2):
    WC's 1,000 words of frequency ranks 2,001–3,000 with 120 sentences each, and at most
    100,000 / 10,000 / 10,000 training / validation / test sentences per task
    (``split_sizes``), each split 10/12, 1/12, 1/12 of each class. ``split_sizes=None`` lifts
    the caps. :meth:`deviations` names every value that differs from the release's.

    Raises:
        ValueError: bins that are empty, overlap or are out of order; non-positive sizes;
            fractions outside (0, 1) or summing to 1 or more; ``split_sizes`` that are not
            three positive integers.
    """

    length_bins: tuple[tuple[int, int], ...] = (
        (5, 8),
        (9, 12),
        (13, 16),
        (17, 20),
        (21, 25),
        (26, 28),
    )
    tree_depths: tuple[int, ...] = (5, 6, 7, 8)
    wc_words: int = 1000
    wc_skip_top: int = 2000
    wc_per_word: int = 120
    max_per_form: int = 100
    max_per_class: int | None = None
    va_fraction: float = 1 / 12
    te_fraction: float = 1 / 12
    split_sizes: tuple[int, int, int] | None = (100_000, 10_000, 10_000)

    def __post_init__(self) -> None:
        previous = 0
        if not self.length_bins:
            raise ValueError("length_bins is empty")
        for low, high in self.length_bins:
            if not (isinstance(low, int) and isinstance(high, int)) or not previous < low <= high:
                raise ValueError(
                    f"length_bins must be increasing, non-overlapping (low, high) word counts "
                    f">= 1; got {self.length_bins}"
                )
            previous = high
        if not self.tree_depths or any(d < 1 for d in self.tree_depths):
            raise ValueError(f"tree_depths must be depths >= 1; got {self.tree_depths}")
        for name in ("wc_words", "wc_per_word", "max_per_form"):
            check_scalar(getattr(self, name), name, int, min_val=1)
        check_scalar(self.wc_skip_top, "wc_skip_top", int, min_val=0)
        if self.max_per_class is not None:
            check_scalar(self.max_per_class, "max_per_class", int, min_val=3)
        for name in ("va_fraction", "te_fraction"):
            check_scalar(
                getattr(self, name), name, float, min_val=0, max_val=1, include_boundaries="neither"
            )
        if self.va_fraction + self.te_fraction >= 1:
            raise ValueError(
                f"va_fraction + te_fraction must be below 1; got "
                f"{self.va_fraction} + {self.te_fraction}"
            )
        sizes = self.split_sizes
        if sizes is not None and (
            len(sizes) != 3
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in sizes)
        ):
            raise ValueError(
                f"split_sizes must be three positive integers (tr, va, te) or None; got {sizes!r}"
            )

    def deviations(self) -> dict[str, dict[str, Any]]:
        """Each setting whose value differs from the release's (:data:`RELEASE_RECIPE`):
        ``{name: {"release": value, "used": value}}``; empty for the release's recipe."""
        release, used = asdict(RELEASE_RECIPE), asdict(self)
        return {
            name: {"release": release[name], "used": used[name]}
            for name in release
            if _comparable(release[name]) != _comparable(used[name])
        }

    def length_bin(self, n_words: int) -> int | None:
        """The index of the bin holding ``n_words``, or None."""
        for index, (low, high) in enumerate(self.length_bins):
            if low <= n_words <= high:
                return index
        return None


#: the release's recipe (Conneau et al. 2018): :class:`Recipe`'s defaults
RELEASE_RECIPE = Recipe()


def _comparable(value: Any) -> Any:
    """Tuples and lists alike (``asdict`` keeps tuples, JSON gives lists)."""
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(item) for item in value)
    return value


@dataclass(frozen=True)
class _Parsed:
    """One sentence's words and its parse: fine tags, relations, 0-based heads (root: -1),
    and universal tags (``pos``, empty where the pipeline gives none)."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    deps: tuple[str, ...]
    heads: tuple[int, ...]
    pos: tuple[str, ...] = ()

    def children(self, head: int, relations: Sequence[str]) -> list[int]:
        return [
            i
            for i, (h, dep) in enumerate(zip(self.heads, self.deps))
            if h == head and dep in relations
        ]

    def subtree(self, index: int) -> set[int]:
        """The indices of ``index``'s subtree (``index`` included)."""
        return {i for i in range(len(self.words)) if self._dominates(index, i)}

    def is_proper(self, index: int) -> bool:
        """Whether the word keeps its capital inside a sentence: a proper noun (``NNP``,
        ``NNPS``, UPOS ``PROPN``), the pronoun "I" (also untokenised, "I'm"), or a word with a
        capital after its first letter ("IBM", "McCain")."""
        word = self.words[index]
        return (
            self.tags[index] in ("NNP", "NNPS")
            or (bool(self.pos) and self.pos[index] == "PROPN")
            or word == "I"
            or word.startswith(("I'", "I’"))
            or word[1:] != word[1:].lower()
        )

    def _dominates(self, top: int, index: int) -> bool:
        while index != -1:
            if index == top:
                return True
            index = self.heads[index]
        return False


# one candidate example: (label, sentence words, target word form or None, length bin)
_Example = tuple[str, tuple[str, ...], str | None, int]


def tree_depth(heads: Sequence[int]) -> int:
    """Depth of a dependency tree given 0-based heads (the root's head is -1): the number of
    words on the longest path from the root down to a word (a one-word sentence has depth 1).

    Raises:
        ValueError: not exactly one root, a head out of range, or a cycle.
    """
    n = len(heads)
    if sum(1 for head in heads if head == -1) != 1 or any(not -1 <= h < n for h in heads):
        raise ValueError(f"heads must hold one root (-1) and indices in 0..{n - 1}; got {heads}")
    deepest = 0
    for index in range(n):
        depth, node = 0, index
        while node != -1:
            depth += 1
            node = heads[node]
            if depth > n:
                raise ValueError(f"heads hold a cycle: {heads}")
        deepest = max(deepest, depth)
    return deepest


def read_sentences(path: str | Path) -> tuple[tuple[str, ...], ...]:
    """Tokenised sentences from a text file: one sentence a line, tokens separated by
    whitespace; blank lines skipped.

    Raises:
        ValueError: a missing file or one without sentences.
    """
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"text file {str(file)!r} does not exist")
    lines = file.read_text(encoding="utf-8").splitlines()
    sentences = tuple(tuple(line.split()) for line in lines if line.split())
    if not sentences:
        raise ValueError(f"text file {str(file)!r} holds no sentences")
    return sentences


def generate_tasks(
    sentences: Sequence[Sequence[str]],
    out: str | Path,
    tasks: Sequence[str] | None = None,
    *,
    random_state: int = 0,
    recipe: Recipe | None = None,
    nlp: Any = None,
) -> dict[str, Any]:
    """Build SentEval probing tasks from ``sentences`` and write them to the folder ``out``.

    Each task becomes ``out / TASK_FILES[task]`` (the release's names), and ``out /
    METADATA_FILE`` records the recipe, the settings in which it deviates from the release's
    (``deviations``, :meth:`Recipe.deviations`), the seed, the spaCy pipeline, every file's
    counts per split and label, its sizes per split and number of classes, and for the order
    tasks (BShift, CoordInv) the accuracy of the surface-cue baseline
    (:func:`~probemeter.datasets.senteval_cues.surface_cue_accuracy`, on at most
    :data:`CUE_SAMPLE` of the task's sentences; chance is 0.5), which stays near chance when
    the inversion leaves no trace on the surface. Nothing is written unless every task can be
    built.

    Args:
        sentences: tokenised sentences (word sequences), e.g. from :func:`read_sentences` or
            :func:`~probemeter.datasets.conll.ptb_sentences`.
        tasks: names from :data:`GENERATED_TASKS` (None: all of them).
        recipe: the recipe (None: :class:`Recipe`'s defaults).
        nlp: a loaded spaCy pipeline with a tagger and parser, used for TreeDepth, Tense,
            SubjNum, ObjNum and CoordInv; default
            ``spacy.load(probemeter.datasets.conll.DEFAULT_SPACY_MODEL)``.

    Returns:
        The metadata written to ``METADATA_FILE``.

    Raises:
        ValueError: an unknown or ungeneratable task (TopConst, SOMO: saying why), no
            sentence within the length bins, or a task with too few qualifying sentences to
            put every class in every split (naming the task and what to change).
    """
    recipe = recipe or Recipe()
    check_scalar(random_state, "random_state", int, min_val=0)
    chosen = _chosen_tasks(tasks)
    kept = _usable_sentences(sentences, recipe)
    parsed: list[_Parsed | None] = [None] * len(kept)
    pipeline = None
    if any(task in _PARSED_TASKS for task in chosen):
        parsed, pipeline = _parse(kept, nlp)
    files: dict[str, list[tuple[str, str, str]]] = {}
    for task in chosen:
        rng = np.random.default_rng([random_state, list(TASK_FILES).index(task)])
        examples = _BUILDERS[task](kept, parsed, recipe, rng)
        files[task] = _split_balanced(task, examples, recipe, rng)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    metadata: dict[str, Any] = {
        "format": "probemeter.senteval-generation/2",
        "silver": True,
        "random_state": random_state,
        "recipe": asdict(recipe),
        "deviations": recipe.deviations(),
        "spacy": pipeline,
        "n_sentences": len(sentences),
        "n_usable": len(kept),
        "tasks": {},
    }
    for task, rows in files.items():
        write_senteval(out / TASK_FILES[task], rows, task)
        counts: dict[str, dict[str, int]] = {split: {} for split in SPLITS}
        for split, label, _ in rows:
            counts[split][label] = counts[split].get(label, 0) + 1
        metadata["tasks"][task] = {
            "file": TASK_FILES[task],
            "counts": counts,
            "sizes": {split: sum(counts[split].values()) for split in SPLITS},
            "classes": len(counts["tr"]),
        }
        if task in _ORDER_TASKS:
            stream = np.random.default_rng([random_state, list(TASK_FILES).index(task), 1])
            metadata["tasks"][task]["surface_cues"] = _surface_cues(rows, stream)
    write_text_atomic(out / METADATA_FILE, json.dumps(metadata, indent=2) + "\n")
    return metadata


def _surface_cues(rows: list[tuple[str, str, str]], rng: np.random.Generator) -> dict[str, Any]:
    """The surface-cue baseline on at most :data:`CUE_SAMPLE` of ``rows`` (a seeded sample),
    or why it was not run (fewer than :data:`_CUE_MINIMUM` sentences in a class)."""
    from probemeter.datasets.senteval_cues import surface_cue_accuracy

    chosen = rng.permutation(len(rows))[:CUE_SAMPLE]
    labels = [rows[i][1] for i in chosen]
    fewest = min(Counter(labels).values())
    if fewest < _CUE_MINIMUM:
        return {"skipped": f"a class has {fewest} sentences, fewer than {_CUE_MINIMUM}"}
    return surface_cue_accuracy(labels, [rows[i][2] for i in chosen]).to_dict()


def _chosen_tasks(tasks: Sequence[str] | None) -> tuple[str, ...]:
    if tasks is None:
        return GENERATED_TASKS
    if isinstance(tasks, str) or not tasks:
        raise ValueError(f"tasks must be a non-empty list of task names; got {tasks!r}")
    for task in tasks:
        if task in _NOT_GENERATED:
            raise ValueError(f"task {task!r} cannot be generated: {_NOT_GENERATED[task]}")
        if task not in GENERATED_TASKS:
            raise ValueError(f"tasks: {task!r} is none of {GENERATED_TASKS}")
    return tuple(dict.fromkeys(tasks))


def _usable_sentences(sentences: Sequence[Sequence[str]], recipe: Recipe) -> list[tuple[str, ...]]:
    """Distinct sentences (first occurrence kept) whose length is in a bin, words without
    whitespace."""
    if isinstance(sentences, str):
        raise ValueError("sentences must be a sequence of word sequences, not one string")
    kept: dict[tuple[str, ...], None] = {}
    for index, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            raise ValueError(f"sentences[{index}] is a string; give its words (a list)")
        words = tuple(sentence)
        if any(not word or any(char.isspace() for char in word) for word in words):
            raise ValueError(f"sentences[{index}] has an empty word or one with whitespace")
        if recipe.length_bin(len(words)) is not None:
            kept.setdefault(words, None)
    if not kept:
        low, high = recipe.length_bins[0][0], recipe.length_bins[-1][1]
        raise ValueError(f"no sentence of sentences has {low}..{high} words (length_bins)")
    return list(kept)


#: pipeline components whose output no task reads: left out of parsing (they change neither
#: tags nor trees, and the recogniser and lemmatiser take most of the small pipeline's time)
_UNUSED_COMPONENTS = ("ner", "lemmatizer", "entity_ruler", "entity_linker", "textcat", "spancat")


def _parse(
    sentences: list[tuple[str, ...]], nlp: Any
) -> tuple[list[_Parsed | None], dict[str, Any]]:
    """Tag and parse each sentence as given (its own tokens); None where the parser splits it
    into more than one sentence."""
    from spacy.tokens import Doc

    if nlp is None:
        import spacy

        from probemeter.datasets.conll import DEFAULT_SPACY_MODEL

        nlp = spacy.load(DEFAULT_SPACY_MODEL)
    unused = [name for name in nlp.pipe_names if name in _UNUSED_COMPONENTS]
    docs = (Doc(nlp.vocab, words=list(words)) for words in sentences)
    parsed: list[_Parsed | None] = []
    for doc in nlp.pipe(docs, disable=unused):
        roots = [token for token in doc if token.head.i == token.i]
        if len(roots) != 1:
            parsed.append(None)
            continue
        parsed.append(
            _Parsed(
                tuple(token.text for token in doc),
                tuple(token.tag_ for token in doc),
                tuple(token.dep_ for token in doc),
                tuple(-1 if token.head.i == token.i else token.head.i for token in doc),
                tuple(token.pos_ for token in doc),
            )
        )
    meta = getattr(nlp, "meta", {})
    pipeline: dict[str, Any] = {key: str(meta.get(key, "?")) for key in ("lang", "name", "version")}
    pipeline["components"] = [name for name in nlp.pipe_names if name not in unused]
    return parsed, pipeline


_Sentences = list[tuple[str, ...]]
_Parses = list["_Parsed | None"]
_Builder = Callable[[_Sentences, _Parses, Recipe, np.random.Generator], list[_Example]]


def _sentence_length(
    sentences: _Sentences, parsed: _Parses, recipe: Recipe, rng: np.random.Generator
) -> list[_Example]:
    found = []
    for words in sentences:
        index = recipe.length_bin(len(words))
        found.append((str(index), words, None, index))
    return found


def _word_content(
    sentences: _Sentences, parsed: _Parses, recipe: Recipe, rng: np.random.Generator
) -> list[_Example]:
    frequency = Counter(word for words in sentences for word in set(words) if word.isalpha())
    ranked = sorted(frequency, key=lambda word: (-frequency[word], word))
    chosen = set(ranked[recipe.wc_skip_top : recipe.wc_skip_top + recipe.wc_words])
    inside = {
        index: hits
        for index, words in enumerate(sentences)
        if (hits := [word for word in words if word in chosen])
    }
    while chosen:  # drop the word with fewest sentences holding it alone, until all have enough
        alone: dict[str, list[int]] = {word: [] for word in chosen}
        for index, hits in inside.items():
            if len(hits) == 1:
                alone[hits[0]].append(index)
        weakest = min(sorted(chosen), key=lambda word: len(alone[word]))
        if len(alone[weakest]) >= recipe.wc_per_word:
            break
        chosen.discard(weakest)
        inside = {
            index: kept
            for index, hits in inside.items()
            if (kept := [w for w in hits if w != weakest])
        }
    if len(chosen) < 2:
        raise ValueError(
            f"WC: fewer than two of the {recipe.wc_words} words after the top "
            f"{recipe.wc_skip_top} have {recipe.wc_per_word} sentences holding them alone; "
            "lower wc_per_word or wc_skip_top, or give more text"
        )
    found = []
    for word in sorted(chosen):
        picked = rng.choice(alone[word], size=recipe.wc_per_word, replace=False)
        for index in sorted(picked):
            words = sentences[index]
            found.append((word, words, None, recipe.length_bin(len(words))))
    return found


def _tree_depth(
    sentences: _Sentences, parsed: _Parses, recipe: Recipe, rng: np.random.Generator
) -> list[_Example]:
    by_bin: dict[int, dict[int, list[int]]] = {}
    for index, parse in enumerate(parsed):
        if parse is None:
            continue
        depth = tree_depth(parse.heads)
        if depth in recipe.tree_depths:
            length_bin = recipe.length_bin(len(parse.words))
            by_bin.setdefault(length_bin, {}).setdefault(depth, []).append(index)
    found = []
    for length_bin, depths in sorted(by_bin.items()):
        if len(depths) < len(recipe.tree_depths):
            continue  # a depth absent at this length: keeping the bin would tie depth to length
        least = min(len(items) for items in depths.values())
        for depth, items in sorted(depths.items()):
            for index in sorted(rng.choice(items, size=least, replace=False)):
                found.append((str(depth), sentences[index], None, length_bin))
    return found


def _halves(count: int, rng: np.random.Generator) -> np.ndarray:
    """``count - count % 2`` bools, a random half of them True (zipped with ``count`` items,
    an odd count's last item is left out, so the two classes are equal)."""
    flags = np.zeros(count - count % 2, dtype=bool)
    flags[: len(flags) // 2] = True
    return rng.permutation(flags)


def _bigram_shift(
    sentences: _Sentences, parsed: _Parses, recipe: Recipe, rng: np.random.Generator
) -> list[_Example]:
    found = []
    usable = [words for words in sentences if _shift_positions(words)]
    for words, invert in zip(usable, _halves(len(usable), rng)):
        if invert:
            places = _shift_positions(words)
            i = places[int(rng.integers(len(places)))]
            words = (*words[:i], words[i + 1], words[i], *words[i + 2 :])
        found.append(("I" if invert else "O", words, None, recipe.length_bin(len(words))))
    return found


def _shift_positions(words: Sequence[str]) -> list[int]:
    """The positions ``i`` where BShift may invert ``words[i]`` and ``words[i + 1]``: two
    different alphabetic words, the first word of the sentence never among them (its capital
    would move inside the sentence)."""
    return [
        i
        for i in range(1, len(words) - 1)
        if words[i].isalpha() and words[i + 1].isalpha() and words[i] != words[i + 1]
    ]


def _root(parse: _Parsed) -> int:
    return parse.heads.index(-1)


def _tagged_word(word: Callable[[_Parsed], int | None], labels: Mapping[str, str]) -> _Builder:
    """A task labelling each parsed sentence by the fine tag of one of its words (``word``
    gives its index, or None to skip the sentence), mapped through ``labels`` (sentences whose
    tag has no label are left out); the word's lower-cased form is kept for the split."""

    def build(
        sentences: _Sentences, parsed: _Parses, recipe: Recipe, rng: np.random.Generator
    ) -> list[_Example]:
        found = []
        for parse in parsed:
            index = None if parse is None else word(parse)
            if index is None:
                continue
            label = labels.get(parse.tags[index])
            if label is not None:
                form = parse.words[index].lower()
                found.append((label, parse.words, form, recipe.length_bin(len(parse.words))))
        return found

    return build


def _first_child(relations: Sequence[str]) -> Callable[[_Parsed], int | None]:
    """The root's first dependent by one of ``relations``, or None."""

    def word(parse: _Parsed) -> int | None:
        targets = parse.children(_root(parse), relations)
        return targets[0] if targets else None

    return word


#: bracket pairs that must close inside the part of a sentence they open in
_BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"), ("-LRB-", "-RRB-"), ("``", "''"))


def _is_word(token: str) -> bool:
    return any(char.isalnum() for char in token)


def _balanced(tokens: Sequence[str]) -> bool:
    """Every quote and bracket in ``tokens`` is closed within them."""
    if sum(token == '"' for token in tokens) % 2:
        return False
    return all(tokens.count(left) == tokens.count(right) for left, right in _BRACKETS)


def _coordination(parse: _Parsed) -> tuple[str, ...] | None:
    """The sentence with the order of its two coordinated clauses inverted, or None when it is
    not two coordinated clauses.

    Two clauses: the root has one ``cc`` and one ``conj`` dependent (in that order), a subject,
    and the conjunct has a subject of its own; the conjunct's subtree is every word from after
    the ``cc`` word to the last word (a final punctuation mark may be inside it or not), and the
    ``cc`` word has no dependents. ``words = first + separator + [cc] + second + tail`` (the
    separator and the tail are punctuation tokens, e.g. "," and ".") becomes ``second +
    separator + [cc] + first + tail``, with the case fixed at the new sentence boundary (the
    module docstring). None also where the sentence or a clause begins with punctuation, or a
    quote or bracket opens in one part and closes in another."""
    words, root = parse.words, _root(parse)
    end = len(words)
    while end > 0 and not _is_word(words[end - 1]):
        end -= 1
    conjuncts = parse.children(root, ("conj",))
    links = parse.children(root, ("cc",))
    if len(conjuncts) != 1 or len(links) != 1 or not parse.children(root, _SUBJECTS):
        return None
    conj, cc = conjuncts[0], links[0]
    if not (root < cc < conj < end) or not parse.children(conj, _SUBJECTS):
        return None
    clause = parse.subtree(conj)
    if min(clause) != cc + 1 or not all(i in clause for i in range(cc + 1, end)):
        return None
    if parse.subtree(cc) != {cc}:
        return None
    start = cc  # the separator: the punctuation right before the cc word stays before it
    while start > 0 and not _is_word(words[start - 1]):
        start -= 1
    first, separator = words[:start], words[start:cc]
    second, tail = words[cc + 1 : end], words[end:]
    if not first or not _is_word(first[0]) or not _is_word(second[0]):
        return None
    if not all(_balanced(part) for part in (first, separator, second, tail)):
        return None
    if first[0][:1].isupper():  # the sentence is cased: its new first word takes the capital
        if not parse.is_proper(0):
            first = (first[0][:1].lower() + first[0][1:], *first[1:])
        second = (second[0][:1].upper() + second[0][1:], *second[1:])
    return (*second, *separator, words[cc], *first, *tail)


def _coordination_inversion(
    sentences: _Sentences, parsed: _Parses, recipe: Recipe, rng: np.random.Generator
) -> list[_Example]:
    usable = [(parse, swapped) for parse in parsed if parse and (swapped := _coordination(parse))]
    found = []
    for (parse, swapped), invert in zip(usable, _halves(len(usable), rng)):
        words = swapped if invert else parse.words
        found.append(("I" if invert else "O", words, None, recipe.length_bin(len(words))))
    return found


_BUILDERS: dict[str, _Builder] = {
    "SentLen": _sentence_length,
    "WC": _word_content,
    "TreeDepth": _tree_depth,
    "BShift": _bigram_shift,
    "Tense": _tagged_word(_root, _TENSES),
    "SubjNum": _tagged_word(_first_child(_SUBJECTS), _NUMBERS),
    "ObjNum": _tagged_word(_first_child(("dobj",)), _NUMBERS),
    "CoordInv": _coordination_inversion,
}


def _split_balanced(
    task: str, examples: list[_Example], recipe: Recipe, rng: np.random.Generator
) -> list[tuple[str, str, str]]:
    """``(split, label, sentence)`` rows: at most ``max_per_form`` examples per (label,
    target form); each class split te/va/tr by ``te_fraction`` / ``va_fraction`` (by target
    form where there is one, so a form stays in one split); then every class downsampled to
    the rarest one within each split, to ``max_per_class`` overall (in proportion), and to
    ``split_sizes[split] // K`` for K classes (so a split holds at most its size)."""
    by_label: dict[str, list[_Example]] = {}
    for example in examples:
        by_label.setdefault(example[0], []).append(example)
    if len(by_label) < 2:
        raise ValueError(
            f"{task}: {len(examples)} qualifying sentences with {len(by_label)} class(es); "
            "two or more are needed: give more text"
        )
    parts: dict[str, dict[str, list[_Example]]] = {split: {} for split in SPLITS}
    placed: dict[str, str] = {}  # target form -> its split, shared by the classes
    for label, items in sorted(by_label.items()):
        items = _cap_per_form(items, recipe.max_per_form, rng)
        for split, chosen in _split_items(items, recipe, rng, placed).items():
            parts[split][label] = chosen
    rows = []
    for split in SPLITS:
        least = min(len(parts[split].get(label, ())) for label in by_label)
        if recipe.max_per_class is not None:
            share = recipe.va_fraction if split == "va" else recipe.te_fraction
            share = 1 - recipe.va_fraction - recipe.te_fraction if split == "tr" else share
            least = min(least, max(1, round(share * recipe.max_per_class)))
        if recipe.split_sizes is not None:
            size = recipe.split_sizes[SPLITS.index(split)]
            if size < len(by_label):
                raise ValueError(
                    f"{task}: split_sizes allows {size} {split!r} sentences, fewer than its "
                    f"{len(by_label)} classes; raise split_sizes"
                )
            least = min(least, size // len(by_label))
        if least == 0:
            raise ValueError(
                f"{task}: too few qualifying sentences ({len(examples)}) to put every one of "
                f"its {len(by_label)} classes in the {split!r} split; give more text, or "
                "change the recipe (e.g. fewer classes)"
            )
        split_rows = []
        for label in sorted(by_label):
            items = parts[split][label]
            for index in sorted(rng.choice(len(items), size=least, replace=False)):
                split_rows.append((split, label, " ".join(items[index][1])))
        rows.extend(split_rows[i] for i in rng.permutation(len(split_rows)))
    return rows


def _cap_per_form(items: list[_Example], cap: int, rng: np.random.Generator) -> list[_Example]:
    by_form: dict[str | None, list[int]] = {}
    for index, item in enumerate(items):
        by_form.setdefault(item[2], []).append(index)
    kept = []
    for form, indices in by_form.items():
        if form is not None and len(indices) > cap:
            indices = sorted(rng.choice(indices, size=cap, replace=False))
        kept.extend(indices)
    return [items[index] for index in sorted(kept)]


def _split_items(
    items: list[_Example], recipe: Recipe, rng: np.random.Generator, placed: dict[str, str]
) -> dict[str, list[_Example]]:
    """One class's examples by split, by target form when the examples have one (whole
    forms), else by example: in a seeded order, each unit goes to the test split, else the
    validation split, if that split stays within its share, else to training; a split left
    empty takes the smallest training unit. A form already in ``placed`` (from another class,
    e.g. "put" tagged VBD and VBP) goes to its split; ``placed`` records the new forms."""
    units: dict[Any, list[_Example]] = {}
    for index, item in enumerate(items):
        units.setdefault(item[2] if item[2] is not None else index, []).append(item)
    keys = list(units)
    order = [keys[i] for i in rng.permutation(len(keys))]
    # a hair above the share, so that 120 examples at 1/12 give 10, not 9 (10 * (1 - 1e-16))
    targets = {
        "te": recipe.te_fraction * len(items) + 1e-9,
        "va": recipe.va_fraction * len(items) + 1e-9,
    }
    keys_of: dict[str, list[Any]] = {split: [] for split in SPLITS}
    filled = {split: 0 for split in SPLITS}
    for key in order:  # a unit joins the first split it does not overfill (tr takes the rest)
        size = len(units[key])
        split = placed.get(key) or next(
            (s for s in ("te", "va") if filled[s] + size <= targets[s]), "tr"
        )
        keys_of[split].append(key)
        filled[split] += size
    for split in ("te", "va"):  # a share smaller than every unit: the smallest unit of tr
        movable = [key for key in keys_of["tr"] if key not in placed]
        if not keys_of[split] and len(keys_of["tr"]) > 1 and movable:
            smallest = min(movable, key=lambda key: len(units[key]))
            keys_of["tr"].remove(smallest)
            keys_of[split].append(smallest)
    for split, keys in keys_of.items():
        placed.update((key, split) for key in keys if isinstance(key, str))
    split_of = {split: [item for key in keys_of[split] for item in units[key]] for split in SPLITS}
    return split_of
