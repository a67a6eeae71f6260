"""The biaffine dependency-parsing probe of Pimentel et al. (2020), App. B, stacked over probes.

A simplified Dozat & Manning (2017) parser with no LSTM: two MLPs of one architecture (§6.2's
family: ReLU layers, dropout) map each word's representation to a head view and a dependent
view, ``h_i,head = MLP_head(h_i)``, ``h_j,dep = MLP_dep(h_j)`` (eq. 9), and a biaffine function
scores word i as the head of word j,

    l_ij = h_i,headᵀ U h_j,dep + uᵀ h_i,head        (eq. 10, plus a head-prior term),

normalised over the candidate heads of j, ``p(i is the head of j) = softmax_i(l_ij)`` (eq. 11).
Candidates are the words of the sentence and a learned ROOT vector (position 0, passed through
the same MLP); a word cannot head itself. Training minimises the mean cross-entropy of the gold
heads; prediction takes each word's arg-max head (App. B) or, with ``decode="mst"``, the
maximum spanning tree of the log-probabilities (Edmonds,
:func:`probemeter.pareto.parsing.mst_heads`).
A linear term in the dependent alone (as in the authors' code) cancels in the softmax over
heads and is left out.

P parsers of one architecture train at once: every parameter has a leading probe axis and all
probes see the same minibatches of sentences (their order keyed by ``random_state``); probe
i's initial weights and its dropout masks come from its own ``keys[i]`` streams, so a parser
trains alike whichever parsers share its stack, and a rerun gives the same parsers.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Dozat, T. & Manning, C. D. (2017). Deep biaffine attention for neural dependency parsing.
    *ICLR 2017*. arXiv:1611.01734

    Edmonds, J. (1967). Optimum branchings.
    *Journal of Research of the National Bureau of Standards* 71B(4), 233–240.
    doi:10.6028/jres.071B.032
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from probemeter._device import resolve_device
from probemeter._validation import one_of
from probemeter.pareto.defaults import PARSER_DECODE, PARSER_TRAINING
from probemeter.pareto.parsing import check_parse, mst_heads, sentence_offsets
from probemeter.probes.mlp import MLP
from probemeter.training.config import ParserTraining, config_or_default

__all__ = ["ParserEvaluation", "fit_biaffine_parsers"]

_DECODERS = ("argmax", "mst")


@dataclass(frozen=True)
class ParserEvaluation:
    """Per-probe results of :func:`fit_biaffine_parsers` on each evaluation set.

    Attributes:
        uas: (P, n_sets) unlabelled attachment score on each evaluation set.
        loss: (P, n_sets) mean cross-entropy of the gold heads, in nats.
        heads: per evaluation set, the (P, n_words) predicted heads (1-based, 0 = root).
    """

    uas: np.ndarray
    loss: np.ndarray
    heads: tuple[np.ndarray, ...]


@dataclass
class _Sentences:
    """A corpus on the device: flat features, and per sentence padded word indices."""

    features: torch.Tensor  # (n_words, d)
    index: torch.Tensor  # (S, L) flat word index, 0 on padding
    heads: torch.Tensor  # (S, L) gold head (0 = root), -1 on padding
    lengths: np.ndarray  # (S,)

    @classmethod
    def build(
        cls,
        name: str,
        X: object,
        heads: object,
        sentence_ids: object,
        device: torch.device,
        rooted: bool = True,
    ) -> _Sentences:
        features = np.array(X, dtype=np.float32)  # a writable copy (X may be memory-mapped)
        heads, sentence_ids = check_parse(heads, sentence_ids, rooted=rooted)
        if features.ndim != 2 or features.shape[0] != heads.size:
            raise ValueError(f"{name} must be (n_words={heads.size}, d); got {features.shape}")
        starts, lengths = sentence_offsets(sentence_ids)
        positions = np.arange(lengths.max())
        valid = positions[None, :] < lengths[:, None]
        index = np.where(valid, starts[:, None] + positions[None, :], 0)
        padded_heads = np.where(valid, heads[index], -1)
        return cls(
            torch.as_tensor(features, device=device),
            torch.as_tensor(index, device=device),
            torch.as_tensor(padded_heads, device=device),
            lengths,
        )


class _StackedBiaffine(torch.nn.Module):
    def __init__(self, probe: MLP, keys: Sequence[Sequence[int]], n_features: int) -> None:
        super().__init__()
        rngs = [np.random.default_rng(list(key)) for key in keys]
        widths = [n_features, *probe.hidden]
        self.dropout = probe.dropout
        self.root = _stack([rng.normal(0, 1, n_features) for rng in rngs])
        self.layers = torch.nn.ParameterList()
        for _ in ("head", "dependent"):
            for fan_in, fan_out in itertools.pairwise(widths):
                bound = 1 / math.sqrt(fan_in)
                self.layers.append(
                    _stack([rng.uniform(-bound, bound, (fan_in, fan_out)) for rng in rngs])
                )
                self.layers.append(
                    _stack([rng.uniform(-bound, bound, (1, fan_out)) for rng in rngs])
                )
        out = widths[-1]
        bound = math.sqrt(6 / (2 * out))  # Xavier-uniform, as the authors' Biaffine
        self.biaffine = _stack([rng.uniform(-bound, bound, (out, out)) for rng in rngs])
        self.head_prior = _stack([np.zeros(out) for _ in rngs])
        self.depth = len(probe.hidden)
        #: per probe, the seed of its dropout masks (its own stream, after its weights)
        self.dropout_seeds = [int(rng.integers(2**63)) for rng in rngs]
        self.generators: list[torch.Generator] = []

    def _dropout(self, x: torch.Tensor) -> torch.Tensor:
        """Inverted dropout with probe p's mask drawn from its own generator (x: (P, ...))."""
        if not self.training or self.dropout == 0:
            return x
        if not self.generators:
            self.generators = [
                torch.Generator(device=x.device).manual_seed(seed) for seed in self.dropout_seeds
            ]
        keep = torch.stack(
            [
                torch.rand(x.shape[1:], generator=generator, device=x.device)
                for generator in self.generators
            ]
        )
        return x * (keep >= self.dropout) / (1 - self.dropout)

    def _mlp(self, x: torch.Tensor, offset: int) -> torch.Tensor:
        for layer in range(self.depth):
            weight = self.layers[offset + 2 * layer][:, None]
            bias = self.layers[offset + 2 * layer + 1][:, None]
            x = torch.relu(x @ weight + bias)
            x = self._dropout(x)
        return x

    def forward(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Log-probabilities (P, B, L+1, L+1) of head i (dim 2) for word j (dim 3), position 0
        the root; impossible heads (padding, self) get -inf."""
        n_probes, (batch, length, _) = self.root.shape[0], words.shape
        root = self.root[:, None, None, :].expand(-1, batch, 1, -1)
        x = torch.cat([root, words.expand(n_probes, -1, -1, -1)], dim=2)
        heads = self._mlp(x, 0)
        dependents = self._mlp(x, 2 * self.depth)
        scores = (heads @ self.biaffine[:, None]) @ dependents.transpose(2, 3)
        scores = scores + (heads @ self.head_prior[:, None, :, None])
        size = length + 1
        positions = torch.arange(size, device=words.device)
        padding = positions[None, :] > lengths[:, None]  # (B, L+1): beyond the sentence
        blocked = padding[:, :, None] | torch.eye(size, dtype=torch.bool, device=words.device)
        scores = scores.masked_fill(blocked[None], -math.inf)
        return torch.log_softmax(scores, dim=2)


def _stack(arrays: list[np.ndarray]) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.from_numpy(np.stack(arrays).astype(np.float32)))


def fit_biaffine_parsers(
    X_train: object,
    heads_train: object,
    sentences_train: object,
    eval_sets: Sequence[tuple[object, object, object]],
    probe: MLP,
    keys: Sequence[Sequence[int]],
    *,
    config: ParserTraining | None = None,
    decode: str = PARSER_DECODE,
    random_state: int = 0,
    device: str | torch.device = "cpu",
    rooted: bool = True,
) -> ParserEvaluation:
    """Train one biaffine parser per key on the training sentences; evaluate on each set.

    Args:
        X_train: (n_words, d) word representations, sentence after sentence.
        heads_train: (n_words,) gold heads, 1-based within the sentence, 0 for the root.
        sentences_train: (n_words,) sentence id of each word (each sentence contiguous).
        eval_sets: ``(X, heads, sentence_ids)`` triples to evaluate on (e.g. the test set,
            and the training set itself for the label-shuffled training UAS).
        probe: the MLP architecture of both views (its dropout applies during training).
        keys: one integer tuple per parser, seeding its initial weights.
        config: Adam updates on minibatches of whole sentences (:class:`ParserTraining`);
            default :data:`~probemeter.pareto.defaults.PARSER_TRAINING`, the ``pareto``
            method's (1000 updates at lr 1e-3 on minibatches of 32 sentences).
        decode: ``"argmax"`` (App. B) or ``"mst"`` (Edmonds' maximum spanning tree).
        random_state: seeds the minibatch order, shared by the stacked parsers.
        rooted: require a word attached to the root in every sentence (False for the heads
            of a control task, :func:`~probemeter.pareto.parsing.check_parse`).

    Raises:
        ValueError: no keys, a bad ``decode``, invalid heads (e.g. a sentence with no root).
    """
    if len(keys) == 0:
        raise ValueError("keys is empty: give one key per parser to train")
    one_of(*_DECODERS)(decode, "decode")
    config = config_or_default(config, PARSER_TRAINING)
    steps = config.steps
    torch_device = resolve_device(device)
    train = _Sentences.build("X_train", X_train, heads_train, sentences_train, torch_device, rooted)
    evaluations = [
        _Sentences.build(f"eval_sets[{i}] features", *triple, torch_device, rooted)
        for i, triple in enumerate(eval_sets)
    ]
    for position, corpus in enumerate(evaluations):
        if corpus.features.shape[1] != train.features.shape[1]:
            raise ValueError(f"eval_sets[{position}] has another feature width than X_train")
    model = _StackedBiaffine(probe, keys, train.features.shape[1]).to(torch_device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    n_sentences = train.index.shape[0]
    batch = min(config.batch_sentences, n_sentences)
    rng = np.random.default_rng([random_state, 0xB1AF])
    order = np.concatenate(
        [rng.permutation(n_sentences) for _ in range(-(-steps * batch // n_sentences))]
    )
    lengths_all = torch.as_tensor(train.lengths, device=torch_device)
    model.train()
    for step in range(steps):
        chosen = torch.as_tensor(order[step * batch : (step + 1) * batch], device=torch_device)
        log_probs, gold = _batch(model, train, chosen, lengths_all)
        loss = _nll(log_probs, gold).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    results = [_evaluate(model, corpus, decode) for corpus in evaluations]
    return ParserEvaluation(
        uas=np.stack([r[0] for r in results], axis=1) if results else np.empty((len(keys), 0)),
        loss=np.stack([r[1] for r in results], axis=1) if results else np.empty((len(keys), 0)),
        heads=tuple(r[2] for r in results),
    )


def _batch(
    model: _StackedBiaffine, corpus: _Sentences, chosen: torch.Tensor, lengths_all: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = lengths_all[chosen]
    longest = int(lengths.max())
    words = corpus.features[corpus.index[chosen, :longest]]
    return model(words, lengths), corpus.heads[chosen, :longest]


def _nll(log_probs: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """Per probe, mean −log p(gold head) over the real words of the batch."""
    valid = gold >= 0
    # log_probs[p, b, i, j]: head i of word j; words are positions 1.. of dim 3
    picked = log_probs[..., 1:].gather(
        2, gold.clamp_min(0)[None, :, None, :].expand(log_probs.shape[0], -1, 1, -1)
    )
    picked = picked.squeeze(2).masked_fill(~valid[None], 0.0)
    return -picked.sum(dim=(1, 2)) / valid.sum()


@torch.no_grad()
def _evaluate(
    model: _StackedBiaffine, corpus: _Sentences, decode: str, block: int = 64
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_probes = model.root.shape[0]
    lengths_all = torch.as_tensor(corpus.lengths, device=corpus.features.device)
    n_words = int(corpus.lengths.sum())
    predicted = np.empty((n_probes, n_words), dtype=np.int64)
    nll_total = torch.zeros(n_probes, dtype=torch.float64)
    cursor = 0
    for start in range(0, corpus.index.shape[0], block):
        chosen = torch.arange(start, min(start + block, corpus.index.shape[0]))
        chosen = chosen.to(corpus.features.device)
        log_probs, gold = _batch(model, corpus, chosen, lengths_all)
        nll_total += _nll(log_probs, gold).double().cpu() * int((gold >= 0).sum())
        valid = (gold >= 0).cpu().numpy()
        count = int(valid.sum())
        if decode == "argmax":
            best = log_probs[..., 1:].argmax(dim=2).cpu().numpy()  # (P, B, L)
            predicted[:, cursor : cursor + count] = best[:, valid]
        else:  # Edmonds per sentence and probe: a Python loop, only on request
            scores = log_probs.cpu().numpy()
            offset = cursor
            for row, length in enumerate(corpus.lengths[start : start + block]):
                for p in range(n_probes):
                    predicted[p, offset : offset + length] = mst_heads(
                        scores[p, row, : length + 1, : length + 1]
                    )
                offset += length
        cursor += count
    gold_flat = corpus.heads[corpus.heads >= 0].cpu().numpy()  # row-major: sentence order
    uas = (predicted == gold_flat[None, :]).mean(axis=1)
    return uas, (nll_total / n_words).numpy(), predicted
