"""Scoring rules: what a completed hypothesis scores, and the most any continuation of a live prefix can score.

A scoring rule answers two questions for every item of the beam at decoding step ``t`` (``t`` counts the
tokens generated so far, this step's token included; ``T`` is the last step, at which every live item is
finished by force):

* ``final(view)``: the score of the hypothesis if it ends now (it emitted EOS, or ``t == T``);
* ``bound(view)``: an upper bound on ``final`` of every hypothesis that extends the item and ends at some
  step in ``t+1 .. T``.

Invariant of every rule whose ``bound_is_proof`` is True (the property tests check it on every expansion of
whole search trees): no descendant of a live item ever has a final score above that item's bound. Given it,
the optimality certificate of Huang, Zhao & Ma (2017) — stop once the best completed score is >= the best
bound in the beam (their Eq. 2 and Eq. 5) — returns exactly the best hypothesis the same beam would complete
if it ran on to ``T``. A ``predicted`` bound (Yang, Huang & Ma, 2018) assumes no continuation outgrows the
target length ``l``; it is a heuristic, and the statistics say so.

Lengths. ``|y|`` is the number of output tokens *excluding* EOS (the words a user sees): a hypothesis whose
EOS is the ``t``-th generated token has ``|y| = t - 1``; one cut at ``T`` without EOS has ``|y| = T``.
``|x|`` is the source length in the tokens the model reads (after transforms such as SentencePiece), and
``l = ratio * |x|``. Scores are float32 tensors, as OpenNMT-py computes them; every bound is built with the
same operations as the score it bounds, from quantities that can only be larger, so that rounding (which is
monotone) cannot break admissibility.

Precision. A decode in half precision (OpenNMT-py's ``-precision fp16``, eole's ``compute_dtype``) hands the
rules its log-probabilities in the model's type: OpenNMT-py sums them in that type, eole and transformers in
float32. Rounding to nearest is monotone in every binary floating-point type, so the argument above holds in
whatever type the beam computes a score, as long as the bound is computed in the same one: a rule computes
``final`` and ``bound`` with the same operations on the same ``log_prob``. The length rewards are added in
float32 at least (``wide``): ``r * |y|`` rounded to half precision would change the rule itself (``r = 0.8``
is ``0.7998`` in float16, ``0.8008`` in bfloat16), whereas a half-precision sum is exact in float32.

Rules: ``StockScore`` (OpenNMT-py's ``-length_penalty none|avg|wu``; ``none`` is Section 3's log-probability),
``BoundedWordReward`` (Section 4; "BWR" in Yang et al.), ``WordReward`` (He et al. 2016's unbounded per-word
reward), ``BPNorm`` (Yang et al. 2018's brevity-penalty normalization).

The registry (``SCORING_RULES``, in the manner of sacrebleu's metrics): the rules that options select in place
of the toolkit's own score, by name, in order of precedence. Each declares the options it reads (``options``,
``option_table``'s names, the one that selects it first: its ``switch``), when they select it (``selected``), what
else it needs (``needs``: an option and why), whether it is ``normalized`` (``-bound predicted`` applies) and how
it is made from the options' values (``from_options``), how it checks a number it reads (``checks``) and the
options of a sweep's setting that ask for it (``setting``); ``register`` adds one. ``select``, ``option_checks``
and ``build`` are the only readers: validation (``flags.check_search``) and construction (``registry.rules``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Mapping

import torch

from onmt_optimal.search import limits

BOUNDS = ("exact", "predicted")

#: OpenNMT-py's length penalties ``lp(n, alpha)`` (``onmt/translate/penalties.py``), the same Python float
#: operations, so that a score divided by one is bit for bit the beam's own
PENALTIES = {
    "none": lambda n, alpha: 1.0,
    "avg": lambda n, alpha: n**alpha,
    "wu": lambda n, alpha: ((5 + n) / 6.0) ** alpha,
}


@dataclass
class StepView:
    """What a scoring rule may look at for the ``(B, beam)`` items of one decoding step."""

    log_prob: torch.Tensor  # (B, beam) float: cumulative log p(y_<=t | x) of each item
    #: (B, beam) bool: the item's token is EOS (if it ends now, ``|y| = t - 1``; else ``|y| = t``, cut at ``T``)
    eos: torch.Tensor
    src_len: torch.Tensor  # (B,) float: |x|
    t: int  # the decoding step's index: tokens generated so far, its end token included
    max_length: int  # T
    stock_score: torch.Tensor | None = None  # (B, beam): the beam's own score of the item if it ends now
    #: what a rule computes once per batch (its target lengths, a constant part of its bound): the search keeps
    #: one dict per batch and empties it when examples leave; a view made on its own starts empty
    memo: dict = field(default_factory=dict)
    #: divide by a Python number as CUDA does (``divide``): set where these tensors live on the host but the
    #: decode's own scores come from a CUDA device (the ``host`` option: ``search.transfer``)
    like_cuda: bool = False

    @cached_property
    def out_len(self) -> torch.Tensor:
        """(B, beam) long: |y| if the item ends now (EOS excluded), made on first use."""
        return self.t - self.eos.long()

    def divide(self, x: torch.Tensor, d: float) -> torch.Tensor:
        """``x / d`` for a Python number ``d``, as the decode's device computes it. CUDA computes a float32 tensor
        divided by a Python number as its product with the float32 reciprocal of ``d`` (PyTorch's
        ``div_true_kernel_cuda``: ``1.0f / float(d)``, then one multiplication), which may differ in the last bit
        from the CPU's division; a bound must be computed as the score it bounds is (``like_cuda``)."""
        if not self.like_cuda:
            return x / d
        inverse = self.once(("1/d", d), lambda: torch.tensor(1.0, dtype=x.dtype, device=x.device)
                            / torch.tensor(d, dtype=x.dtype, device=x.device))
        return x * inverse

    def once(self, key, make: Callable[[], torch.Tensor]) -> torch.Tensor:
        """``make()``, computed on the first call with ``key`` in this batch (the same operations every time,
        so the numbers are those of a fresh computation)."""
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]


def wide(dtype: torch.dtype) -> torch.dtype:
    """The type a rule adds its length terms in: float32, or the scores' own type where it is wider."""
    return torch.promote_types(dtype, torch.float32)


class ScoringRule:
    """Base class: a rule is a pair (final score, upper bound on the final score of any continuation)."""

    name = "abstract"
    #: True when ``bound`` is a proof (admissible), so a stop on it is certified
    bound_is_proof = True

    def final(self, view: StepView) -> torch.Tensor:
        raise NotImplementedError

    def bound(self, view: StepView) -> torch.Tensor:
        raise NotImplementedError

    def target_length(self, src_len: torch.Tensor) -> torch.Tensor | None:
        """The length ``l`` the rule aims at, if it has one (reported in the statistics)."""
        return None

    def describe(self) -> str:
        return self.name

    # ------------------------------------------------ a rule of the registry (``SCORING_RULES``) declares these
    #: the options (``option_table``'s names) the rule reads, the one that selects it (``switch``) first
    options: tuple[str, ...] = ()
    #: the options it needs given where it is selected, each with the end of the one line that says why
    needs: tuple[tuple[str, str], ...] = ()
    #: whether the score is normalized by the length (a ``predicted`` bound applies to it)
    normalized = False
    #: (option, check) of each number it reads, selected or not: ``limits``' ``check(name, value, T, per=None)``
    checks: tuple[tuple[str, Callable[..., str | None]], ...] = ()
    #: ``setting(reward, ratio)``: the options of a sweep's setting that ask for it (``from_options``' inverse)
    setting: Callable[[float | None, float | None], dict]

    @classmethod
    def switch(cls) -> str:
        """The option that selects the rule (its first)."""
        return cls.options[0]

    @classmethod
    def selected(cls, values: Mapping) -> bool:
        """Whether option ``values`` (by name; a missing one is not given) select this rule."""
        return False

    @classmethod
    def from_options(cls, values: Mapping) -> "ScoringRule":
        """The rule the (validated) option ``values`` make."""
        raise NotImplementedError


class _Targeted(ScoringRule):
    """A rule with a target length ``l = ratio * |x|``."""

    ratio: float | None = None

    def target_length(self, src_len):
        return None if self.ratio is None else src_len * self.ratio

    def _target(self, view: StepView) -> torch.Tensor:
        """(B, 1) ``l``, computed once per batch."""
        return view.once((id(self), "target"), lambda: self.target_length(view.src_len).unsqueeze(1))


def _check_bound(bound: str, ratio) -> None:
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}")
    if bound == "predicted" and ratio is None:
        raise ValueError("a predicted bound needs a length ratio")


class StockScore(_Targeted):
    """OpenNMT-py's own score: ``log p(y|x) / lp(n)`` with its ``-length_penalty`` (``none``, ``avg``, ``wu``).

    ``lp(n)`` is OpenNMT-py's penalty of a hypothesis of ``n`` tokens counting BOS and EOS, i.e. ``n = t + 1``
    for one that ends at step ``t``: ``avg``: ``n ** alpha``; ``wu``: ``((5 + n) / 6) ** alpha``; ``none``: 1.
    In the beam search the final score is exactly what stock computes (``topk_scores``, including a coverage
    penalty if one is on), so default search stays byte-identical.

    Bound (``none``): ``log p`` itself, since log-probabilities only fall as a prefix grows (paper, Theorem 1).
    Bound (``avg``/``wu``, ``exact``): a descendant ending at ``t' in t+1..T`` scores ``log p' / lp(t'+1)``
    with ``log p' <= log p <= 0``; dividing a non-positive number by the largest penalty any such ``t'`` has
    gives the largest value: ``log p / max(lp(t+2), lp(T+1))``. Sound but loose (it looks as far as
    ``max_length``), so normalized scores stop late. ``predicted`` looks only as far as ``max(t+1, l)``.
    A coverage penalty can raise a score as a hypothesis grows, so no bound exists for it.
    """

    def __init__(self, length_penalty: str = "none", alpha: float = 1.0, coverage: bool = False,
                 bound: str = "exact", ratio: float | None = None, own: bool = True):
        """``length_penalty``/``alpha``: OpenNMT-py's ``-length_penalty``/``-alpha``; ``coverage``: a coverage
        penalty is on. ``own``: this is the score the decode itself ranks with, so the beam's own score of an
        item (``stock_score``, coverage penalty included) is this rule's score. A rule evaluated on another
        decode's beam sets it False."""
        _check_bound(bound, ratio)
        if length_penalty not in PENALTIES:
            raise ValueError(f"length_penalty must be one of {tuple(PENALTIES)}")
        self.own = own
        self.length_penalty, self.alpha = length_penalty, alpha
        self.normalized = length_penalty != "none"
        self.has_coverage = coverage
        self.bound_mode = bound if self.normalized else "exact"
        self.ratio = ratio
        self.bound_is_proof = self.bound_mode == "exact" and not self.has_coverage
        self.name = "normalized" if self.normalized else "logprob"

    def describe(self) -> str:
        if not self.normalized:
            return "log p(y|x)"
        return f"log p(y|x) / lp(|y|+2), lp = OpenNMT-py length penalty, alpha {self.alpha}"

    def _lp(self, n) -> float:
        return PENALTIES[self.length_penalty](n, self.alpha)

    def final(self, view: StepView) -> torch.Tensor:
        if self.own and view.stock_score is not None:
            return view.stock_score
        if not self.normalized:
            return view.log_prob
        return view.divide(view.log_prob, self._lp(view.t + 1))  # the float32 op of OpenNMT-py's advance()

    def bound(self, view: StepView) -> torch.Tensor:
        if self.has_coverage:
            return torch.full_like(view.log_prob, float("inf"))
        if not self.normalized:
            return view.log_prob
        if self.bound_mode == "exact":
            return view.divide(view.log_prob, max(self._lp(view.t + 2), self._lp(view.max_length + 1)))
        # predicted: the longest continuation considered ends at step clamp(l, t+1, T), per example
        last = self._target(view).clamp(min=view.t + 1, max=view.max_length).ceil().long()
        table = self._penalty_table(view.max_length, view.log_prob.device)  # table[t'] = lp(t' + 1)
        largest = torch.maximum(table[min(view.t + 1, view.max_length)], table[last])
        return view.log_prob / largest.to(view.log_prob.dtype)

    def _penalty_table(self, T: int, device) -> torch.Tensor:
        key = (T, str(device))
        if getattr(self, "_table_key", None) != key:
            self._table = torch.tensor([self._lp(n + 1) for n in range(T + 1)], dtype=torch.float64, device=device)
            self._table_key = key
        return self._table


class BoundedWordReward(_Targeted):
    """Section 4's bounded length reward: ``score~(y) = log p(y|x) + r * min(l, |y|)`` with ``l = ratio * |x|``.

    Bound: any descendant has ``log p' <= log p`` and ``|y'| <= T``, so it scores at most
    ``log p + r * min(l, T)``. Where ``l <= T`` this is the paper's simplified criterion (Eq. 5,
    ``score(B_i,1) + r*l``); where ``l > T`` it is tighter and still admissible. With ``r = 0`` the rule is the
    raw log-probability of Section 3. The reward never reorders the beam: all items of a step share a length.
    """

    name = "bounded_reward"
    options = ("length_reward", "length_ratio")
    checks = (("length_reward", limits.reward_error),)
    setting = staticmethod(lambda reward, ratio: {"length_reward": reward, "length_ratio": ratio})

    @classmethod
    def selected(cls, values):
        return (values.get("length_reward") or 0) > 0 and values.get("length_ratio") is not None

    @classmethod
    def from_options(cls, values):
        return cls(values["length_reward"], values["length_ratio"])

    def __init__(self, reward: float, ratio: float):
        if reward < 0:
            raise ValueError("the length reward must be >= 0")
        if ratio is None or ratio <= 0:
            raise ValueError("the length ratio must be > 0")
        self.reward = float(reward)
        self.ratio = float(ratio)

    def describe(self) -> str:
        return f"log p(y|x) + {self.reward} * min({self.ratio} |x|, |y|)"

    def final(self, view: StepView) -> torch.Tensor:
        # r * min(l, |y|) for the two lengths an item of step t can end with, per example ((B, 1) columns: the
        # same float32 numbers as per item, in fewer operations)
        target, reward = self._target(view), self._reward(view)
        ended = reward * target.clamp(max=float(view.t - 1))  # |y| = t - 1: its EOS is the t-th token
        cut = reward * target.clamp(max=float(view.t))  # |y| = t: cut at T without an EOS
        return view.log_prob + torch.where(view.eos, ended, cut)

    def bound(self, view: StepView) -> torch.Tensor:
        most = view.once((id(self), "most"),
                         lambda: self._reward(view) * self._target(view).clamp(max=float(view.max_length)))
        return view.log_prob + most  # r * min(l, T): the same for every step of the batch

    def _reward(self, view: StepView) -> torch.Tensor:
        """``r`` as a 0-d float32 tensor (``wide``), made once per batch: a Python number in a tensor operation
        costs a conversion each time (the product is the same float32 one)."""
        return view.once((id(self), "r"), lambda: torch.tensor(self.reward, dtype=wide(view.log_prob.dtype),
                                                              device=view.log_prob.device))


class WordReward(ScoringRule):
    """He et al. (2016)'s unbounded per-word reward: ``score(y) = log p(y|x) + r * |y|`` (the paper's 2b).

    Bound: ``log p + r * T``. Exact but late: the reward keeps growing to ``max_length``, so the certificate
    rarely holds before the beam runs dry.
    """

    name = "word_reward"
    options = ("length_reward",)
    checks = (("length_reward", limits.reward_error),)
    setting = staticmethod(lambda reward, ratio: {"length_reward": reward})

    @classmethod
    def selected(cls, values):
        return (values.get("length_reward") or 0) > 0 and values.get("length_ratio") is None

    @classmethod
    def from_options(cls, values):
        return cls(values["length_reward"])

    def __init__(self, reward: float):
        if reward < 0:
            raise ValueError("the length reward must be >= 0")
        self.reward = float(reward)

    def describe(self) -> str:
        return f"log p(y|x) + {self.reward} * |y|"

    def final(self, view: StepView) -> torch.Tensor:
        return view.log_prob + self.reward * view.out_len.to(wide(view.log_prob.dtype))

    def bound(self, view: StepView) -> torch.Tensor:
        # r * T as the score computes r * |y| (a float32 product): r * T in double, rounded to float32 only
        # when added, can fall one ulp below the score's r * |y| at |y| = T (1.2 * 3: 3.6 against 3.6000001)
        most = view.once((id(self), "most"), lambda: self.reward * torch.full(
            (1, 1), float(view.max_length), dtype=wide(view.log_prob.dtype), device=view.log_prob.device))
        return view.log_prob + most


class BPNorm(_Targeted):
    """Yang, Huang & Ma (2018)'s BP-norm: ``score(y) = log bp + log p(y|x) / n``, ``log bp = min(0, 1 - l / n)``.

    ``n = max(|y|, 1)`` (the empty translation is scored as if it had one word, where the formula would divide
    by zero). Both terms grow with ``n`` for a fixed ``log p <= 0``, and ``log p`` only falls, so
    (``exact``) a descendant scores at most ``min(0, 1 - l/T) + log p / T``; ``predicted`` puts
    ``n* = clamp(l, t, T)`` in place of ``T``, assuming no continuation outgrows ``l``.
    """

    name = "bp_norm"
    options = ("bp_norm", "length_ratio", "bound")
    needs = (("length_ratio", "(> 0): its brevity penalty aims at l = RHO * |x|"),)
    normalized = True
    setting = staticmethod(lambda reward, ratio: {"bp_norm": True, "length_ratio": ratio})

    @classmethod
    def selected(cls, values):
        return bool(values.get(cls.switch()))

    @classmethod
    def from_options(cls, values):
        return cls(values.get("length_ratio"), values.get("bound", "exact"))

    def __init__(self, ratio: float, bound: str = "exact"):
        if ratio is None or ratio <= 0:
            raise ValueError("the length ratio must be > 0")
        _check_bound(bound, ratio)
        self.ratio = float(ratio)
        self.bound_mode = bound
        self.bound_is_proof = bound == "exact"

    def describe(self) -> str:
        return f"min(0, 1 - {self.ratio} |x| / |y|) + log p(y|x) / |y|"

    @staticmethod
    def _score(log_prob, n, target):
        return torch.clamp(1.0 - target / n, max=0.0) + log_prob / n

    def final(self, view: StepView) -> torch.Tensor:
        target = self._target(view)
        n = view.out_len.to(target.dtype).clamp(min=1.0)
        return self._score(view.log_prob, n, target)

    def bound(self, view: StepView) -> torch.Tensor:
        target = self._target(view)
        if self.bound_mode == "exact":
            n = torch.full_like(target, float(view.max_length))
        else:
            n = target.ceil().clamp(min=float(view.t), max=float(view.max_length))
        return self._score(view.log_prob, n, target)


#: the rules options select in place of the toolkit's own score, by name, in order of precedence (the first that
#: the options select is the score; validation refuses two of different switches)
SCORING_RULES: dict[str, type[ScoringRule]] = {}


def register(rule: type[ScoringRule]) -> type[ScoringRule]:
    """Add ``rule`` to ``SCORING_RULES`` under its ``name`` (last in precedence); returns it (a class decorator)."""
    if rule.name in SCORING_RULES:
        raise ValueError(f"a scoring rule named {rule.name!r} is registered already")
    SCORING_RULES[rule.name] = rule
    return rule


for _rule in (BPNorm, BoundedWordReward, WordReward):
    register(_rule)


def select(values: Mapping) -> list[type[ScoringRule]]:
    """The registered rules option ``values`` (by name) select, in order of precedence (none: the toolkit's own
    score)."""
    return [rule for rule in SCORING_RULES.values() if rule.selected(values)]


def switches() -> tuple[str, ...]:
    """The options that select a registered rule, each once, in the order of registration."""
    return tuple(dict.fromkeys(rule.switch() for rule in SCORING_RULES.values()))


def option_names() -> tuple[str, ...]:
    """Every option a registered rule reads, each once."""
    return tuple(dict.fromkeys(name for rule in SCORING_RULES.values() for name in rule.options))


def option_checks() -> tuple[tuple[str, Callable[..., str | None]], ...]:
    """Every (option, check) a registered rule declares, once: ``flags.check_search`` and vLLM's server run them."""
    return tuple(dict.fromkeys(check for rule in SCORING_RULES.values() for check in rule.checks))


def build(values: Mapping, own_score: Callable[[], ScoringRule]) -> ScoringRule:
    """The score option ``values`` ask for: the first registered rule they select, else ``own_score()``."""
    chosen = select(values)
    return chosen[0].from_options(values) if chosen else own_score()
