"""Linear softmax probes solved exactly: a stacked, full-batch Newton–CG solver.

A linear probe (logits ``x W + b``, K softmax outputs) trained with an L2 penalty λ > 0 on W
(``TrainingConfig.weight_decay``; biases unpenalised) minimises, on its n training examples,

    J(W, b) = (1/n) Σ_i ℓ(x_i, y_i) + (λ/2) ‖W‖²,     ℓ = −log softmax(x_i W + b)_{y_i},

a smooth convex function, strongly convex in W (curvature ≥ λ). Its gradient and the product
of its Hessian with a direction (V, v) are, with P = softmax(X W + b) (n × K), Y the one-hot
labels and Z_V = X V + 1 vᵀ,

    ∇_W J = Xᵀ (P − Y) / n + λ W,                 ∇_b J = 1ᵀ (P − Y) / n,
    H (V, v) = (Xᵀ U / n + λ V,  1ᵀ U / n),       U = P ⊙ (Z_V − (P ⊙ Z_V) 1 1ᵀ),

two matrix products with X each (Lin, Weng & Keerthi 2008, §3, for the binary case; the
softmax case has the same block structure). :func:`fit_linear_newton` minimises J for every
probe of a stack at once by a damped (Levenberg–Marquardt) inexact Newton method with a line
search as safeguard: at each outer iteration preconditioned conjugate gradients solve

    (H + μ I) s = −∇J,     μ = c ‖∇J‖₂,

for every probe in lockstep (batched matmuls over the probe axis; a probe whose residual has
met its forcing term ‖(H + μI) s + ∇J‖ ≤ η ‖∇J‖, η = 0.1, stops moving; Nocedal & Wright
2006, Algorithm 7.1 with a constant forcing sequence), then a backtracking (Armijo,
c₁ = 1e-4) step per probe from 1. The damping μ = c‖∇J‖ vanishes at the optimum, which keeps
Newton's fast local convergence (Li, Fukushima, Qi & Yamashita 2004), while far from it, where
the quadratic model of a softmax overshoots, it shortens the step and makes CG cheaper; c is
adapted per probe as a trust radius would be (Nocedal & Wright §10.3): divided by 2 after a
full step (to at most 1e-2), multiplied by 4 after one the line search had to shorten. A
probe that has converged leaves the stack (the stack is compacted), so the rest work on fewer
rows. Probes of different sizes share a stack padded with rows of weight 0 (the engine stacks
probes of similar sizes: seeds, settings).

Two devices make it cheap, neither changes where it ends:

* **preconditioner**: pixels and activations are strongly correlated, so H is badly
  conditioned (plain CG took ~840 Hessian products on a Fashion-MNIST probe of 5,000 rows).
  A stack of fewer than :data:`BLOCK_MIN_ROWS` rows uses a Kronecker-factored approximation
  of H (:class:`_KroneckerPreconditioner`, as K-FAC's for one layer; Martens & Grosse 2015,
  arXiv:1503.05671), cheap to build; a larger one H's K diagonal blocks, one per class, on
  up to :data:`SAMPLE_ROWS` of each probe's rows (:class:`_BlockPreconditioner`), which cost
  more to build but cut the Hessian products 3–4× (a Fashion-MNIST probe of 60,000 rows: 1,157
  products with the Kronecker one, ~250 with the blocks; at 17,751 rows the Kronecker one was
  the cheaper in CPU time, at 32,635 the blocks);
* **precision**: the Hessian products, most of the arithmetic, run in bfloat16 where the
  device does bf16 in hardware (3–5× faster than float32 on one AMX core for these skinny
  products) and the stack is large, else float32; an inexact Hessian only slows Newton's
  convergence, but where bf16 is too coarse for a problem (a full Newton step that fails to
  halve the gradient near the optimum: its error swamps curvatures near λ) the stack switches
  to float32 for good. Conjugate gradients run in float32: they only need a direction within
  the forcing term. The objective and gradient, which decide where it ends, are accumulated
  in float64, the rows' products in float32 while ‖∇J‖₂ > 1e-3 in a large stack (errors ~1e-5
  there do not matter) and in float64 after (rows cast block by block; from the start in a
  small stack, whose rows are copied to float64 once, and in a stack of
  :data:`BLOCK_MIN_ROWS` rows or more, where a float32 objective misled the line search); the
  parameters are float64. A float32 gradient of n = 60,000 rows carries errors ~1e-5, whose
  square over 2λ would be a gap of ~1e-6 relative.

Parameters are laid out as θ = (W; b), (d + 1) × K per probe, and the Hessian products read
the rows augmented with a 1, x̃ = (x, 1): a product is then two matrix products, with no
separate bias terms (fewer operations per CG step, which is what a small stack's time is).
Probes on nested subsets (each a prefix of the longest: a curve's sizes of one seed, an online
code's blocks) share one copy of their rows (:func:`gather_stack`), their products one wide
matrix product; a small stack keeps its probabilities classes-major in memory
(:func:`_rows_times`).

**Stopping rule, stated.** A probe stops when ‖∇J‖₂ ≤ ``tol`` (``TrainingConfig.tol``,
default 1e-5; W and b together, in float64). Strong convexity in W bounds the objective still
to gain, J − J* ≤ ‖∇J‖² / (2μ) with μ the smallest curvature, μ ≥ λ in W (in b, unpenalised,
it is the data's): at λ ≥ 1e-4 the gap left is about ≤ 5e-7 nats, at the Fashion-MNIST
protocol's λ ≥ 1.7e-3 ≤ 3e-8 — far below 1e-6 relative of any cross-entropy above 0.05 nats.
A probe still above ``tol`` after ``max_iter`` outer iterations is reported (``converged``
False; the engine warns), never silently used as if solved. The biases, unique only up to a
common constant, are returned centred.

References:
    Lin, C.-J., Weng, R. C. & Keerthi, S. S. (2008). Trust region Newton method for
    large-scale logistic regression. JMLR 9, 627–650.

    Nocedal, J. & Wright, S. J. (2006). Numerical Optimization, 2nd ed., Springer:
    ch. 7.1 (line-search Newton–CG, Algorithm 7.1), ch. 5 (conjugate gradients,
    preconditioned: Algorithm 5.3) and §10.3 (Levenberg–Marquardt).

    Li, D.-H., Fukushima, M., Qi, L. & Yamashita, N. (2004). Regularized Newton methods for
    convex minimization problems with singular solutions. Computational Optimization and
    Applications 28, 131–147.

    Martens, J. & Grosse, R. (2015). Optimizing neural networks with Kronecker-factored
    approximate curvature. ICML. arXiv:1503.05671.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from probemeter.training.config import NEWTON_MAX_ITER, NEWTON_TOL
from probemeter.training.precision import bf16_native

__all__ = [
    "NewtonFit",
    "fit_flops",
    "fit_linear_newton",
    "gather_stack",
    "hessian_vector_product",
    "memory_bytes",
    "objective_gradient",
]

#: conjugate-gradient iterations per outer iteration, at most: with the Kronecker
#: preconditioner, and with the class blocks, whose solves reach the forcing term in 5–35 steps
#: unless the bf16 products' error stalls them (then 60–100 steps bought no better step: at
#: 60,000 Fashion-MNIST rows the gradient fell 0.3–0.45× per iteration either way)
CG_MAX_ITER, BLOCK_CG_MAX_ITER = 100, 30
#: rows of a stack of several probes at most (the engine's chunks): beyond, a probe's products
#: are large enough alone, and stacked probes would wait for each other in lockstep
STACK_ROWS = 16384
#: rows × features of a stack below which padding its probes to one size is cheaper than
#: solving them in separate stacks (overhead-bound)
TINY_STACK = 2**20
#: rows of a stack from which the per-class block preconditioner replaces the Kronecker one
#: (measured on Fashion-MNIST: the Kronecker one cheaper at 17,751 rows, the blocks at 32,635)
BLOCK_MIN_ROWS = 24576
#: rows of each probe on which the block preconditioner's class blocks are estimated (on
#: 8,192 they missed directions enough to cost more Hessian products than they saved)
SAMPLE_ROWS = 16384
#: relative change of λ + μ below which the class blocks' inverses are not recomputed
_REFACTOR_BELOW = 0.1
#: rows per float64 block of the objective and gradient (bounds the float64 copy of X)
_BLOCK_ROWS = 8192
#: Armijo's sufficient-decrease constant and the fewest step halvings before giving up
_ARMIJO, _HALVINGS = 1e-4, 30
#: the forcing term η: CG stops at ‖residual‖ ≤ η ‖∇J‖ (a constant η < 1: linear convergence
#: at rate ~η, Nocedal & Wright Thm. 7.1; tighter solves cost more products than they save)
_FORCING = 0.1
#: the damping μ = c ‖∇J‖: c's start, its floor, and its factors after a shortened / full step
_DAMPING_START, _DAMPING_FLOOR, _DAMPING_UP, _DAMPING_DOWN = 1.0, 1e-2, 4.0, 2.0
#: matrix passes over the data a typical fit takes (the planner's cost estimate, speed only)
_TYPICAL_PASSES = 150
#: rows of each probe on which the Kronecker preconditioner's feature moments are estimated
_MOMENT_ROWS = 8192
#: outer iterations between refreshes of the block preconditioner's class blocks
_BLOCKS_EVERY = 3
#: ‖∇J‖₂ below which the objective and gradient are computed in float64
_PRECISE_BELOW = 1e-3
#: rows × features of a probe below which its Hessian products stay in float32
_BF16_MIN_ENTRIES = 2**20
#: ‖∇J‖₂ below which Newton's local (fast) convergence is expected of a bf16 Hessian
_LOCAL_BELOW = 1e-2


@dataclass(frozen=True)
class NewtonFit:
    """The fitted probes of one stack.

    Attributes:
        weights: (P, d, K) float32.
        biases: (P, K) float32.
        iterations: (P,) outer Newton iterations taken.
        gradient_norm: (P,) ‖∇J‖₂ at the returned parameters (float64).
        objective: (P,) J at the returned parameters (float64).
        converged: (P,) whether ‖∇J‖₂ ≤ tol.
    """

    weights: torch.Tensor
    biases: torch.Tensor
    iterations: np.ndarray
    gradient_norm: np.ndarray
    objective: np.ndarray
    converged: np.ndarray


def _hessian_dtype(device: torch.device) -> torch.dtype:
    """bfloat16 for the Hessian products where ``device`` does bf16 in hardware
    (:func:`~probemeter.training.precision.bf16_native`: CPU flags, CUDA capability; the
    solver's skinny products ran 3–5× faster in it on an AMX core), else float32: where bf16 is
    emulated it is several times slower (issue 44, item 3). Read from the hardware, not timed,
    so that a probe's arithmetic does not depend on the machine's load."""
    return torch.bfloat16 if bf16_native(device)[0] else torch.float32


def memory_bytes(n_features: int, n_classes: int, rows: int, probes: int = 1) -> int:
    """Bytes a stack of ``probes`` probes on ``rows`` rows holds while solving: the float32
    rows, their Hessian-product copy and its transpose, a float64 block of rows, the
    probabilities and CG intermediates (a few (rows, K) arrays), the larger preconditioner's
    factors (the Kronecker one's moments, or the class blocks and their sample)."""
    side = n_features + 1
    kronecker = side**2 * 8 * 3 + _MOMENT_ROWS * n_features * 4
    blocks = n_classes * side**2 * 4 * 3 + SAMPLE_ROWS * side * 2 * 2
    per_probe = (
        rows * n_features * 8
        + _BLOCK_ROWS * n_features * 16
        + rows * n_classes * 4 * 8
        + max(kronecker, blocks)
    )
    return probes * per_probe


def fit_flops(n_features: int, n_classes: int, n_rows: int) -> float:
    """Estimated arithmetic of one probe's fit on ``n_rows`` examples (the chunk planner's
    cost model; speed only): a typical number of passes of 2·n·d·K FLOP each."""
    return 2.0 * n_rows * n_features * n_classes * _TYPICAL_PASSES


def _augmented(X: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(P, m, d + 1) rows x̃ = (x, 1) in ``dtype``: the bias as one more weight row, so that a
    Hessian product is two matrix products and no bias terms."""
    P, m, d = X.shape
    out = torch.empty(P, m, d + 1, dtype=dtype, device=X.device)
    out[..., :d] = X
    out[..., d] = 1
    return out


def _dot(a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Per-probe inner product of two (P, d + 1, K) parameter-shaped tensors, (P, 1, 1): the
    shape in which CG's step sizes scale its vectors (no views at every step)."""
    return (a * c).sum((1, 2), keepdim=True)


def _rows_times(
    X: torch.Tensor,
    A: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    classes_major: bool = False,
) -> torch.Tensor:
    """X A (+ bias) per probe, (P, m, K), for A (P, e, K) and rows X (P, m, e), or (1, m, e)
    rows every probe shares: then ONE product X [A_1 … A_P] (a wider product runs faster than
    P skinny ones: 1.8× on 1,297 × 65 rows, K = 10). Laid out in memory rows-major (row by
    row, the probes' K outputs innermost) or, ``classes_major``, (P, K, m): a small stack's
    elementwise work over K (softmax, the Hessian product's row sums) then runs along
    contiguous rows, 1.6–3× faster on CPU, while a large stack's bf16 products are faster
    rows-major."""
    P, e, K = A.shape
    shared = X.shape[0] < P
    if classes_major:
        At = A.transpose(1, 2)
        if shared:
            Z = (At.reshape(P * K, e) @ X[0].T).view(P, K, -1)
        else:
            Z = torch.bmm(At, X.transpose(1, 2))
        if bias is not None:
            Z += bias.transpose(1, 2)
        return Z.transpose(1, 2)
    if not shared:
        return torch.bmm(X, A) if bias is None else torch.baddbmm(bias, X, A)
    Z = X[0] @ A.transpose(0, 1).reshape(e, P * K)
    if bias is not None:
        Z += bias.transpose(0, 1).reshape(1, P * K)
    return Z.view(-1, P, K).transpose(0, 1)


def _rows_transposed_times(
    X: torch.Tensor, U: torch.Tensor, XT: torch.Tensor | None = None
) -> torch.Tensor:
    """Xᵀ U per probe, (P, e, K), for U (P, m, K) in either layout of :func:`_rows_times`
    and rows X as there; ``XT``, X transposed and contiguous, if given, is read instead of X
    (the faster layout for bf16 rows: on one CPU core ~40 % faster than through X; for
    float32 rows it is not)."""
    P, m, K = U.shape
    if X.shape[0] == P:
        if XT is None:  # (Uᵀ X)ᵀ: the faster layout of the two through X row-major
            return torch.bmm(U.transpose(1, 2), X).transpose(1, 2)
        return torch.bmm(XT, U)
    if U.stride(1) == 1:  # classes-major
        return (U.transpose(1, 2).reshape(P * K, m) @ X[0]).view(P, K, -1).transpose(1, 2)
    shared = X[0].T if XT is None else XT[0]
    return (shared @ U.transpose(0, 1).reshape(m, P * K)).view(-1, P, K).transpose(0, 1)


def _empty_rows(
    P: int, m: int, K: int, *, shared: bool, classes_major: bool, dtype: torch.dtype, device: Any
) -> torch.Tensor:
    """An uninitialised (P, m, K) array laid out as :func:`_rows_times` lays out its
    products."""
    if classes_major:
        return torch.empty(P, K, m, dtype=dtype, device=device).transpose(1, 2)
    if shared:
        return torch.empty(m, P, K, dtype=dtype, device=device).transpose(0, 1)
    return torch.empty(P, m, K, dtype=dtype, device=device)


def _select_probes(t: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``t``'s probes (first axis) ``keep``, in ``t``'s memory layout (so that products and
    elementwise work on it keep their faster layout after the stack is compacted)."""
    order = sorted(range(t.dim()), key=lambda axis: -t.stride(axis))
    selected = t.permute(order).index_select(order.index(0), keep)
    return selected.permute([order.index(axis) for axis in range(t.dim())])


def objective_gradient(
    X: torch.Tensor,
    y: torch.Tensor,
    row_weight: torch.Tensor,
    theta: torch.Tensor,
    lam: torch.Tensor,
    *,
    gradient: bool = True,
    dtype: torch.dtype = torch.float64,
    classes_major: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """J, ∇J and the probabilities P (float32) of every probe of a stack, X's rows cast to
    ``dtype`` block by block, J and ∇J accumulated in float64.

    Args:
        X: (P, m, d) features, any float dtype (padding rows: any value, weight 0), or
            (1, m, d) rows every probe shares (:func:`gather_stack`).
        y: (P, m) int64 labels.
        row_weight: (P, m) each row's weight in the mean, 1/n_p (0 for padding).
        theta: (P, d + 1, K) float64 parameters, the weights W (rows :d) and the biases b
            (row d).
        lam: (P,) float64, λ per probe.
        gradient: also the gradient (θ's shape) and probabilities (else None for those).
        classes_major: the logits' and probabilities' memory layout (:func:`_rows_times`).
    """
    P, d1, K = theta.shape
    m, d = X.shape[1], d1 - 1
    W, b = theta[:, :d], theta[:, d:]
    J = 0.5 * lam * W.square().sum((1, 2))
    g = probs = None
    if gradient:
        g = torch.zeros_like(theta)
        g[:, :d] = lam[:, None, None] * W
        probs = _empty_rows(
            P, m, K, shared=X.shape[0] < P, classes_major=classes_major, dtype=torch.float32,
            device=X.device,
        )  # fmt: skip
    W, b = W.to(dtype), b.to(dtype)
    for start in range(0, m, _BLOCK_ROWS):
        rows = slice(start, min(m, start + _BLOCK_ROWS))
        Xb = X[:, rows].to(dtype)
        logits = _rows_times(Xb, W, b, classes_major=classes_major).to(torch.float64)
        # log-softmax by hand: torch's over a last axis of K ≈ 10 ran 5× slower on CPU
        logits -= logits.amax(2, keepdim=True)
        e = logits.exp()
        total = e.sum(2, keepdim=True)
        weight = row_weight[:, rows].to(torch.float64)
        picked = logits.gather(2, y[:, rows, None]) - total.log()
        J = J - (weight * picked.squeeze(2)).sum(1)
        if gradient:
            p = e.div_(total)
            probs[:, rows] = p
            residual = p.scatter_add_(2, y[:, rows, None], torch.full_like(p[..., :1], -1.0)).mul_(
                weight[..., None]
            )
            g[:, :d] += _rows_transposed_times(Xb, residual.to(dtype))
            g[:, d] += residual.sum(1)
    return J, g, probs


def hessian_vector_product(
    X: torch.Tensor,
    weighted_probs: torch.Tensor,
    probs: torch.Tensor,
    V: torch.Tensor,
    shift: torch.Tensor,
    XT: torch.Tensor | None = None,
) -> torch.Tensor:
    """(H + diag(shift)) V for every probe (the module docstring's formula, bias as the last
    row), in X's dtype, returned in V's: Z = X̃ V, U = P_w ⊙ (Z − (P ⊙ Z) 1 1ᵀ) with P_w the
    probabilities times the rows' 1/n, then X̃ᵀ U + shift ⊙ V.

    Args:
        X: (P, m, d + 1) rows x̃ = (x, 1) (:func:`_augmented`), or (1, m, d + 1) shared.
        weighted_probs: (P, m, K) probabilities times each row's weight, in X's dtype.
        probs: (P, m, K) probabilities in X's dtype, in the layout the product takes
            (:func:`_rows_times`).
        V: (P, d + 1, K) direction.
        shift: broadcastable to V: λ (+ μ) on the weight rows, 0 (+ μ) on the bias row.
        XT: X transposed and contiguous, if given (:func:`_rows_transposed_times`)."""
    Z = _rows_times(X, V.to(X.dtype), classes_major=probs.stride(1) == 1)
    U = weighted_probs * (Z - (probs * Z).sum(2, keepdim=True))
    XtU = _rows_transposed_times(X, U, XT)
    return XtU.to(V.dtype).addcmul_(shift, V)


def _shift(lam: torch.Tensor, damping: torch.Tensor, d: int) -> torch.Tensor:
    """(P, d + 1, 1) float32: λ + μ on the d weight rows, μ on the (unpenalised) bias row."""
    shift = (lam + damping).float()[:, None, None].repeat(1, d + 1, 1)
    shift[:, d] = damping.float()[:, None]
    return shift


class _KroneckerPreconditioner:
    """M ≈ H + μI, a Kronecker-factored approximation of the Hessian (as K-FAC's, Martens &
    Grosse 2015, for one layer): with x̃ the features augmented with a 1 (the bias) and
    B_i = diag(p_i) − p_i p_iᵀ the softmax curvature of example i, H's data term
    (1/n) Σ_i x̃_i x̃_iᵀ ⊗ B_i is approximated by C ⊗ A, the rows' second moments
    C = (1/n) Σ_i x̃_i x̃_iᵀ (K-FAC's independence assumption; on up to :data:`_MOMENT_ROWS` of
    the probe's rows, once) times the mean curvature A = (1/n) Σ_i B_i at the current
    probabilities, and M = C ⊗ A + (λ + μ) I is applied to a residual R (d+1 × K) through the
    eigendecompositions C = U Σ Uᵀ, A = Q Λ Qᵀ as U ((Uᵀ R Q) ⊘ (σ λ_Aᵀ + λ + μ)) Qᵀ. C is
    fixed: weighting its rows by their curvature's trace, re-estimated every 3 iterations,
    cost more CPU than it saved in Hessian products (Fashion-MNIST probes of 845 … 17,751
    rows). It only speeds conjugate gradients, never changes the solution."""

    max_steps = CG_MAX_ITER

    def __init__(self, sample: torch.Tensor, sizes: np.ndarray) -> None:
        """``sample``: (P, rows, d + 1) float32 rows x̃ = (x, 1), each probe's first
        min(n_p, :data:`_MOMENT_ROWS`) of them counted. Float32 throughout: a preconditioner
        needs no more, at half float64's cost."""
        self.mask = _sample_weights(sizes, sample.shape[1], sample.device).float()
        C = torch.matmul(sample.transpose(1, 2), sample * self.mask[..., None])
        self.sigma, self.U = torch.linalg.eigh(C)
        self.sigma = self.sigma.clamp(min=0)

    def subset(self, keep: torch.Tensor) -> None:
        self.mask, self.sigma, self.U = self.mask[keep], self.sigma[keep], self.U[keep]

    def factors(self, probs: torch.Tensor, damping: torch.Tensor) -> None:
        """A at the current probabilities, its eigendecomposition, the denominators with
        ``damping`` = λ + μ per probe."""
        p = probs[:, : self.mask.shape[1]]
        pw = p * self.mask[..., None]
        A = torch.diag_embed(pw.sum(1)) - torch.bmm(p.transpose(1, 2), pw)
        lam_A, self.Q = torch.linalg.eigh(A)
        self.denominator = torch.baddbmm(
            damping.float()[:, None, None], self.sigma[:, :, None], lam_A.clamp(min=0)[:, None, :]
        )

    def apply(self, R: torch.Tensor) -> torch.Tensor:
        """M⁻¹ R for a float32 residual R (P, d + 1, K)."""
        T = torch.bmm(torch.bmm(self.U.transpose(1, 2), R), self.Q).div_(self.denominator)
        return torch.bmm(torch.bmm(self.U, T), self.Q.transpose(1, 2))


class _BlockPreconditioner:
    """M ≈ H + μI from H's K diagonal blocks, one per class: with x̃ the features augmented
    with a 1, class k's block of the data term is G_k = (1/n) Σ_i p_ik (1 − p_ik) x̃_i x̃_iᵀ
    (estimated on up to :data:`SAMPLE_ROWS` of the probe's rows, refreshed every
    :data:`_BLOCKS_EVERY` iterations, the products in the Hessian products' dtype), and M⁻¹
    applied to a residual R (d+1 × K) is column k ↦ (G_k + (λ + μ) I)⁻¹ R_k (a Cholesky
    factor, inverted, per block, again whenever the blocks are refreshed or λ + μ has moved by
    over :data:`_REFACTOR_BELOW`), R and the result centred across classes.

    The blocks drop the classes' cross terms −p_ik p_il x̃ x̃ᵀ, which the Kronecker
    approximation keeps only on average, but keep each class's own curvature over the
    features, which is where pixels and activations make H ill-conditioned. Centring: W, b
    and every gradient and Hessian product stay centred across classes (softmax is invariant
    to adding one column to all, and H maps centred directions to centred ones), so M⁻¹ acts
    on that subspace; a block whose Cholesky factorisation fails (an estimate made indefinite
    by bf16 rounding) is inverted through its eigendecomposition with negative eigenvalues
    set to 0."""

    max_steps = BLOCK_CG_MAX_ITER

    def __init__(self, rows: torch.Tensor, sizes: np.ndarray) -> None:
        """``rows``: (P, m, d + 1) rows x̃ = (x, 1) in the Hessian products' dtype; each
        probe's first min(n_p, :data:`SAMPLE_ROWS`) are the sample."""
        self.X = rows[:, :SAMPLE_ROWS]
        self.mask = _sample_weights(sizes, self.X.shape[1], rows.device).float()
        self.refreshes = 0

    def subset(self, keep: torch.Tensor) -> None:
        self.mask = self.mask[keep]
        if self.X.shape[0] > 1:  # not rows the probes share
            self.X = self.X[keep]
        if self.refreshes:
            self.G, self.inverse, self.factored = self.G[keep], self.inverse[keep], None

    def factors(self, probs: torch.Tensor, damping: torch.Tensor) -> None:
        """The class blocks at the current probabilities (every few iterations), the inverse
        of each plus ``damping`` = λ + μ per probe (every iteration)."""
        P, (rows, side) = self.mask.shape[0], self.X.shape[1:]
        if self.refreshes % _BLOCKS_EVERY == 0:
            p = probs[:, :rows].float()
            scale = (p * (1 - p) * self.mask[..., None]).sqrt().to(self.X.dtype)
            self.G = torch.empty(P, p.shape[2], side, side, device=self.X.device)
            for k in range(p.shape[2]):  # one class at a time: a (P, rows, d+1) copy at most
                A = self.X * scale[:, :, k, None]
                self.G[:, k] = torch.bmm(A.transpose(1, 2), A).float()
            self.factored = None
        self.refreshes += 1
        damping = damping.float()
        if self.factored is not None and bool(
            ((damping - self.factored).abs() <= _REFACTOR_BELOW * self.factored).all()
        ):
            return  # near the optimum μ ≪ λ: the inverses of the last damping serve as well
        self.factored = damping
        M = self.G + damping[:, None, None, None] * torch.eye(side, device=self.G.device)
        factor, info = torch.linalg.cholesky_ex(M)
        self.inverse = torch.cholesky_inverse(factor)
        failed = info > 0
        if bool(failed.any()):
            values, vectors = torch.linalg.eigh(self.G[failed])
            lifted = damping[:, None].expand(failed.shape)[failed]
            values = values.clamp(min=0) + lifted[:, None]
            self.inverse[failed] = (vectors / values[..., None, :]) @ vectors.transpose(-1, -2)

    def apply(self, R: torch.Tensor) -> torch.Tensor:
        """M⁻¹ R for a float32 residual R (P, d + 1, K)."""
        R = (R - R.mean(2, keepdim=True)).transpose(1, 2)  # (P, K, d+1)
        Z = torch.matmul(self.inverse, R[..., None])[..., 0].transpose(1, 2)
        return Z - Z.mean(2, keepdim=True)


def _sample_weights(sizes: np.ndarray, rows: int, device: torch.device) -> torch.Tensor:
    """(P, rows) float64: 1/count on each probe's first count = min(n_p, rows) rows, else 0
    (a preconditioner's row sample, the mean over it)."""
    weights = torch.zeros(len(sizes), rows, dtype=torch.float64, device=device)
    for p, count in enumerate(np.minimum(sizes, rows)):
        weights[p, :count] = 1.0 / count
    return weights


def _preconditioner(
    X: torch.Tensor, Xh: torch.Tensor, sizes: np.ndarray
) -> _KroneckerPreconditioner | _BlockPreconditioner:
    """The cheaper preconditioner for a stack of X.shape[1] rows (:data:`BLOCK_MIN_ROWS`),
    on the Hessian products' rows ``Xh`` (the Kronecker one's moments in float32 always)."""
    if X.shape[1] >= BLOCK_MIN_ROWS:
        return _BlockPreconditioner(Xh, sizes)
    rows = min(X.shape[1], _MOMENT_ROWS)
    sample = Xh[:, :rows] if Xh.dtype == torch.float32 else _augmented(X[:, :rows], torch.float32)
    return _KroneckerPreconditioner(sample, sizes)


def _conjugate_gradients(
    X: torch.Tensor,
    XT: torch.Tensor | None,
    weighted_probs: torch.Tensor,
    probs: torch.Tensor,
    shift: torch.Tensor,
    g: torch.Tensor,
    forcing: torch.Tensor,
    preconditioner: _KroneckerPreconditioner | _BlockPreconditioner,
) -> tuple[torch.Tensor, int]:
    """Every probe's damped Newton direction s ≈ −(H + μI)⁻¹∇J (``shift``: λ + μ on the weight
    rows, μ on the bias row) by preconditioned CG from s = 0 (Nocedal & Wright Alg. 5.3), in
    lockstep, in float32 (a direction to within ``forcing`` needs no more: the solution's
    accuracy is the float64 gradient's); a probe stops moving once its residual
    ‖(H + μI) s + ∇J‖ ≤ ``forcing`` (its own). Returns (s (float32, θ's shape), CG
    iterations taken)."""
    r = g.neg().float()
    s = torch.zeros_like(r)
    forcing = forcing.float().square()[:, None, None]  # compared with ‖r‖²
    z = preconditioner.apply(r)
    direction = z
    rz = _dot(r, z)
    active = _dot(r, r) > forcing
    steps = 0
    while bool(active.any()) and steps < preconditioner.max_steps:
        steps += 1
        Hd = hessian_vector_product(X, weighted_probs, probs, direction, shift, XT)
        curvature = _dot(direction, Hd)
        moving = active & (curvature > 0)
        # a probe not moving takes steps of 0 (its quotients, maybe 0/0, are not used)
        alpha = torch.where(moving, rz / curvature, 0.0)
        s.addcmul_(alpha, direction)
        r.addcmul_(alpha, Hd, value=-1)
        active = moving & (_dot(r, r) > forcing)
        z = preconditioner.apply(r)
        rz_new = _dot(r, z)
        direction = z.addcmul_(torch.where(active, rz_new / rz, 0.0), direction)
        rz = rz_new
    return s, steps


def gather_stack(
    pool_x: torch.Tensor,
    pool_y: torch.Tensor,
    subsets: Sequence[np.ndarray],
    pool_file: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every probe's training rows stacked, (P, m, d) float32 features and (P, m) labels, m the
    largest subset; a shorter subset padded with its first row (weight 0 in the solver). When
    every subset is a prefix of the longest (a loss-data curve's nested subsets of one seed, an
    online code's blocks), the longest's rows once, (1, m, d) and (1, m), which the solver's
    probes share (one wide product instead of P skinny ones; P times less memory). With
    ``pool_file`` (:class:`~probemeter._resident.FileRows`, a large memory-mapped pool) the
    rows are read with ``pread``, never mapping the pool."""
    longest = np.asarray(max(subsets, key=len))
    if len(subsets) > 1 and all(np.array_equal(s, longest[: len(s)]) for s in subsets):
        index = longest[None].astype(np.int64)
    else:
        index = np.empty((len(subsets), len(longest)), dtype=np.int64)
        for p, subset in enumerate(subsets):
            index[p, : len(subset)] = subset
            index[p, len(subset) :] = subset[0]
    P, m = index.shape
    if pool_file is not None:
        X = torch.empty(P, m, pool_x.shape[1], dtype=torch.float32)
        pool_file.gather(index.reshape(-1), X.view(P * m, -1).numpy())
    else:
        X = pool_x.index_select(0, torch.as_tensor(index.reshape(-1), device=pool_x.device))
        X = X.view(P, m, -1)
    return X, pool_y[torch.as_tensor(index, device=pool_y.device)]


def fit_linear_newton(
    X: torch.Tensor,
    y: torch.Tensor,
    sizes: Sequence[int] | np.ndarray,
    n_classes: int,
    weight_decay: Sequence[float] | np.ndarray,
    *,
    tol: float = NEWTON_TOL,
    max_iter: int = NEWTON_MAX_ITER,
) -> NewtonFit:
    """Minimise J (the module docstring) for P linear probes at once, probe p on the first
    ``sizes[p]`` rows of its stack at λ = ``weight_decay[p]`` > 0, by stacked damped
    Newton–CG from W = 0, b = 0.

    Args:
        X: (P, m, d) float32 features of every probe, rows past its size ignored, or
            (1, m, d) rows the probes share (:func:`gather_stack`).
        y: (P, m) int64 labels, or (1, m) with shared rows.
        sizes: per probe, its number of training rows n_p ≤ m.
        n_classes: K.
        weight_decay: per probe, λ > 0.
        tol: ‖∇J‖₂ at which a probe stops.
        max_iter: outer iterations at most (a probe still above ``tol`` is not converged).

    Returns:
        A :class:`NewtonFit`.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    P, (m, d) = len(sizes), X.shape[1:]
    shared = X.shape[0] < P
    y = y.expand(P, m)
    device = X.device
    weight = _sample_weights(sizes, m, device).float()  # each probe's rows, 1/n_p each
    lam = torch.as_tensor(np.asarray(weight_decay, dtype=np.float64), device=device)
    theta = torch.zeros(P, d + 1, n_classes, dtype=torch.float64, device=device)  # (W; b)
    out = theta.clone()
    norms, objectives = np.full(P, np.inf), np.zeros(P)
    iterations = np.zeros(P, dtype=np.int64)
    live = np.arange(P)  # the probes still in the stack, by their positions
    # the Hessian products' copy of the rows, augmented with the bias's 1, in bf16 only for a
    # large stack (a small one is bound by overhead, not arithmetic), and its transpose (the
    # faster layout in bf16 only)
    large = m * d >= _BF16_MIN_ENTRIES
    Xh = _augmented(X, _hessian_dtype(device) if large else torch.float32)
    XhT = Xh.transpose(1, 2).contiguous() if Xh.dtype == torch.bfloat16 else None
    # a small stack's objective reads its rows in float64 from the start (one evaluation
    # fewer to switch; copied once, not at every evaluation), and so does one of
    # BLOCK_MIN_ROWS rows or more: a float32 objective there misled its line search (32,635
    # Fashion-MNIST rows: 24 iterations, 12 in float64, each iteration ~10 % dearer); between,
    # far from the optimum, a float32 gradient (errors ~1e-5) steers as well as float64's
    X_objective = X if large else X.double()
    dtype = torch.float32 if large and m < BLOCK_MIN_ROWS else torch.float64
    preconditioner = _preconditioner(X, Xh, sizes)
    c = torch.full((P,), _DAMPING_START, dtype=torch.float64, device=device)
    previous_slow = torch.zeros(P, dtype=torch.bool, device=device)

    def evaluate(point: torch.Tensor) -> tuple[torch.Tensor, Any, Any]:
        """J, ∇J and P at ``point`` on the stack as it is now (its probes, its dtype); a
        small stack's probabilities classes-major (:func:`_rows_times`)."""
        return objective_gradient(
            X_objective, y, weight, point, lam, dtype=dtype, classes_major=not large
        )

    J, g, probs = evaluate(theta)
    for iteration in range(max_iter + 1):
        norm = _dot(g, g).sqrt().view(-1)
        if dtype != torch.float64 and float(norm.min()) <= _PRECISE_BELOW:
            dtype = torch.float64  # J and ∇J again, precisely, before any is judged or used
            J, g, probs = evaluate(theta)
            norm = _dot(g, g).sqrt().view(-1)
        done = (norm <= tol).cpu().numpy() | (iteration == max_iter)
        norms[live], objectives[live] = norm.cpu().numpy(), J.cpu().numpy()
        if done.any():
            out[live[done]] = theta[done]
            keep = torch.as_tensor(np.flatnonzero(~done), device=device)
            live = live[~done]
            if not live.size:
                break
            if not shared:
                X_objective = X_objective[keep]
                Xh, XhT = Xh[keep], None if XhT is None else XhT[keep]
            y, weight, lam, c, previous_slow = (
                y[keep],
                weight[keep],
                lam[keep],
                c[keep],
                previous_slow[keep],
            )
            theta, J, g, norm = theta[keep], J[keep], g[keep], norm[keep]
            probs = _select_probes(probs, keep)  # laid out as their products are
            preconditioner.subset(keep)
        iterations[live] += 1
        damping = c * norm
        preconditioner.factors(probs, lam + damping)
        p = probs.to(Xh.dtype)  # once, not at every product
        s, _ = _conjugate_gradients(
            Xh, XhT, p * weight[..., None].to(Xh.dtype), p, _shift(lam, damping, d), g,
            _FORCING * norm, preconditioner,
        )  # fmt: skip
        s = s.double()
        slope = _dot(g, s).view(-1)
        step = torch.ones_like(J)
        pending = torch.ones_like(J, dtype=torch.bool)
        for _ in range(_HALVINGS):
            candidate = theta + step[:, None, None] * s
            trial = evaluate(candidate)
            accept = pending & (trial[0] <= J + _ARMIJO * step * slope)
            if bool(accept.all()):  # the usual case: every probe's full step taken
                theta, (J, g, probs) = candidate, trial
                break
            if accept.any():
                theta = torch.where(accept[:, None, None], candidate, theta)
                J = torch.where(accept, trial[0], J)
                g = torch.where(accept[:, None, None], trial[1], g)
                probs = torch.where(accept[:, None, None], trial[2], probs)
            pending &= ~accept
            if not pending.any():
                break
            step = torch.where(pending, step / 2, step)
        after = _dot(g, g).sqrt().view(-1)
        # c as a trust radius: smaller after a full step that also reduced the gradient,
        # 4× after a step the line search shortened or one that raised the gradient (the
        # quadratic model overshot)
        good = step == 1
        c = torch.where(good, (c / _DAMPING_DOWN).clamp(min=_DAMPING_FLOOR), c * _DAMPING_UP)
        # near the optimum (where Newton converges fast) full steps that twice in a row did
        # not halve the gradient: a bf16 Hessian too coarse for this problem (its error
        # swamps curvatures near λ), or a float32 objective too coarse to see the decrease
        # the line search asks for: float32 products and float64's objective from here on
        slow = (norm <= _LOCAL_BELOW) & (step == 1) & (after > 0.5 * norm)
        stalled = slow & previous_slow
        previous_slow = slow
        if bool(stalled.any()) and (Xh.dtype != torch.float32 or dtype != torch.float64):
            if Xh.dtype != torch.float32:
                Xh = XhT = None  # the bf16 copies freed before the float32 one is made
                Xh = _augmented(X_objective, torch.float32)  # a large stack's: X itself
            if dtype != torch.float64:
                dtype = torch.float64
                J, g, probs = evaluate(theta)
    # the biases are unique up to a common constant (softmax is invariant to it and they are
    # not penalised): centred, every solution of a probe is the same
    out_W, out_b = out[:, :d], out[:, d]
    out_b = out_b - out_b.mean(1, keepdim=True)
    return NewtonFit(
        out_W.to(torch.float32), out_b.to(torch.float32), iterations, norms, objectives,
        norms <= tol,
    )  # fmt: skip
