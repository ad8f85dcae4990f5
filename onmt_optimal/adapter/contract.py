"""The toolkit contract: every member the shared adapter and the toolkits' steps use of OpenNMT-py 3.5.1's and eole
0.6.4's beam search and translator, declared once, and ``check``, which refuses an object that lacks one.

The members are declared as ``typing.Protocol`` classes (for a reader and a type checker; ``check`` reads them
at run time). A beam search is checked twice, when it is built (``Beam``: what the toolkit's constructor sets)
and when its ``initialize`` has run (``StartedBeam``), both before the first step; a translator each time it
builds a certified search. A member the toolkit renamed or dropped is then one line, a ``ContractError``
(``errors.Fault``: ``PROG: error: ...``, exit status 1), naming the toolkit's class, what it lacks, the
toolkit version the adapter follows and the one installed, instead of an ``AttributeError`` in the middle of a
decode.

Shapes: B examples still in the batch, ``beam`` items each, step ``t`` (tokens generated so far), V the target
vocabulary, S the source length. The hooks a toolkit's adapter implements (``Hooks``) are declared here too and
are abstract on ``beam_search.LineageBeamSearch``. Imports no toolkit.
"""
import functools
from dataclasses import dataclass
from typing import Any, Optional, Protocol

import torch

from onmt_optimal.errors import Fault


class ContractError(Fault):
    """A toolkit object lacks a member the adapter uses: a toolkit version other than the one supported."""


@dataclass(frozen=True)
class Toolkit:
    """A toolkit the adapter follows statement for statement: its distribution ``name``, the ``version`` it
    follows, its top-level ``package``."""

    name: str
    version: str
    package: str

    def installed(self) -> str:
        """The installed distribution's version, or what says it is absent."""
        from importlib import metadata

        try:
            return metadata.version(self.name)
        except metadata.PackageNotFoundError:
            return "none"


OPENNMT_PY = Toolkit("OpenNMT-py", "3.5.1", "onmt")
EOLE = Toolkit("eole", "0.6.4", "eole")


# ---------------------------------------------------------------------------------------------- the beam search
class Scorer(Protocol):
    """The toolkit's ``GNMTGlobalScorer`` (the beam search's ``global_scorer``)."""

    alpha: float
    """the length penalty's alpha"""
    beta: float
    """the coverage penalty's beta"""
    has_len_pen: bool
    """whether a length penalty divides the scores"""
    has_cov_pen: bool
    """whether a coverage penalty applies"""

    def length_penalty(self, length: int, alpha: float) -> float:
        """the divisor of a sum of log-probabilities of ``length`` tokens (1 with none)"""

    def cov_penalty(self, coverage: torch.Tensor, beta: float) -> torch.Tensor:
        """(B * beam,) the coverage penalty of attention summed over steps, (B * beam, 1, S)"""


class Beam(Protocol):
    """What both toolkits' ``BeamSearch`` constructors set and define, and ``LineageBeamSearch`` and the steps use."""

    beam_size: int
    """beam: items kept per example"""
    n_best: int
    """answers handed over per example"""
    batch_size: int
    """B when the search is built"""
    pad: int
    """the target padding token"""
    max_length: int
    """T: the most tokens generated"""
    return_attention: bool
    """whether the items' attention is kept and handed over"""
    global_scorer: Scorer
    """the length and coverage penalties"""
    block_ngram_repeat: int
    """n of the blocked repeated n-grams (0: none)"""
    forbidden_tokens: list
    """per path (B * beam), the n-grams it may not repeat"""
    scores: list
    """per example of the whole batch, the answers' scores handed over (read by the decode loop)"""
    predictions: list
    """per example, the answers' token tensors handed over"""
    attention: list
    """per example, the answers' attention handed over"""
    alive_attn: Optional[torch.Tensor]
    """(B * beam, t, S): the items' attention, or None"""
    select_indices: Optional[torch.Tensor]
    """(B * beam,): the rows the decode loop reorders the model state by after a step"""
    done: bool
    """True once every example has left: the decode loop stops"""
    _batch_offset: torch.Tensor
    """(B,) long, on the host: each row's example in the whole batch"""
    _stepwise_cov_pen: bool
    """the coverage penalty applies at each step"""
    _vanilla_cov_pen: bool
    """the coverage penalty applies to the final score"""
    _cov_pen: bool
    """any coverage penalty: the coverage state is kept"""
    _coverage: Optional[torch.Tensor]
    """(B * beam, 1, S): attention summed over the steps, or None"""
    _prev_penalty: Optional[torch.Tensor]
    """(B, beam): the last step's coverage penalty, or None"""

    def __len__(self) -> int:
        """the items' length: tokens generated plus the start token"""

    def initialize(self, *args, **kwargs) -> Any:
        """tile the encoder's output and start every item (sets what ``StartedBeam`` declares)"""

    def ensure_min_length(self, log_probs: torch.Tensor) -> None:
        """ban the end token before ``min_length``, in place on (B * beam, V)"""

    def ensure_unk_removed(self, log_probs: torch.Tensor) -> None:
        """ban ``<unk>`` under ``ban_unk_token``, in place on (B * beam, V)"""

    def block_ngram_repeats(self, log_probs: torch.Tensor) -> None:
        """ban each path's repeated n-grams, in place on (B * beam, V)"""

    def target_prefixing(self, log_probs: torch.Tensor) -> torch.Tensor:
        """(B * beam, V) with a forced target prefix's tokens imposed"""

    def maybe_update_forbidden_tokens(self) -> None:
        """extend each path's n-grams by its new token, following ``select_indices``"""

    def maybe_update_target_prefix(self, select_index: torch.Tensor) -> None:
        """keep the forced prefix's rows ``select_index``"""


class StartedBeam(Protocol):
    """What both toolkits' ``initialize`` sets."""

    alive_seq: torch.Tensor
    """(B * beam, t + 1) long: each item's tokens, the start token first"""
    topk_log_probs: torch.Tensor
    """(B, beam): each item's running score (its sum of log-probabilities, times a length penalty)"""
    src_len: torch.Tensor
    """(B * beam,): each item's source length"""
    is_finished_list: list
    """read by the decode loop after each step: does ``update_finished`` run"""


class OpenNMTBeam(Beam, Protocol):
    """OpenNMT-py's own."""

    eos: int
    """the end token"""


class EoleBeam(Beam, Protocol):
    """eole's own."""

    eos: list
    """the end tokens, the first one the core's"""
    parallel_gpu: int
    """tensor-parallel ranks: the beam's choice is broadcast from rank 0 where above 1"""
    n_text_tokens: list
    """per example, each answer's count of generated tokens (eole's timing statistics)"""


class EoleStartedBeam(StartedBeam, Protocol):
    """What eole's ``initialize`` sets beside both toolkits'."""

    eos_t: torch.Tensor
    """the end tokens, on the decode's device"""
    _prefix_len: int
    """the forced target prefix's length (0: none)"""


class Hooks(Protocol):
    """The hooks a toolkit's adapter gives ``LineageBeamSearch`` (its own step, statement for statement)."""

    def _expand(self, log_probs: torch.Tensor, attn: Optional[torch.Tensor]) -> tuple:
        """the toolkit's ``advance`` up to the beam's choice (``search.top_k.pick``): ``log_probs``
        (B * beam, V), ``attn`` (B * beam, 1, S) or None; returns ``(cumulative, length_penalty, ends)``: every
        candidate's sum of log-probabilities (B * beam, V), the step's length penalty, and (B, beam) bool the
        chosen items whose token ends a hypothesis"""

    def _answered(self, b: int, tokens: list) -> None:
        """one n-best answer of example ``b`` was handed over (optional)"""

    def _fix_answer(self, result: Any) -> Any:
        """one rule's ``search.record.Record`` adjusted before it is handed over (optional)"""


# ------------------------------------------------------------------------------------------------ the translator
class Translator(Protocol):
    """What ``batch_search`` and ``translator.RecordKeeping`` read of both toolkits' translators: the beam
    search's arguments, built as the toolkit builds its own."""

    beam_size: int
    """beam"""
    n_best: int
    """answers per example"""
    global_scorer: Scorer
    """the length and coverage penalties"""
    min_length: int
    """the fewest tokens before the end token"""
    max_length: int
    """the most tokens generated"""
    max_length_ratio: float
    """with a value above 0, the limit is also this times |x| plus 5"""
    ratio: float
    """the toolkit's own early stop (``-ratio``; 0: none)"""
    block_ngram_repeat: int
    """n of the blocked repeated n-grams"""
    stepwise_penalty: bool
    """the coverage penalty applies at each step"""
    replace_unk: bool
    """attention is kept to replace ``<unk>``"""
    ban_unk_token: bool
    """``<unk>`` is never generated"""
    tgt_file_prefix: bool
    """a forced target prefix is read"""
    _tgt_pad_idx: int
    """the target padding token"""
    _tgt_bos_idx: int
    """the target start-of-sentence token"""
    _tgt_unk_idx: int
    """the target ``<unk>``"""
    _tgt_start_with: int
    """the decoder's start token"""
    _exclusion_idxs: set
    """tokens n-gram blocking ignores"""

    def _log(self, msg: str) -> None:
        """one line of the translator's log"""

    def _report_score(self, name: str, score_total: float, nb_sentences: int) -> str:
        """the closing ``PRED SCORE``/``PRED PPL`` line"""


class OpenNMTTranslator(Translator, Protocol):
    """OpenNMT-py's ``Translator``, as ``opennmt.translator.CertifiedTranslator`` uses it."""

    _tgt_eos_idx: int
    """the end token"""
    sample_from_topk: int
    """random sampling from the k best (0: beam search)"""
    sample_from_topp: float
    """nucleus sampling (0: beam search)"""
    with_score: bool
    """``-with_score``: scores are written with the translations"""

    def _translate_batch_with_strategy(self, batch: dict, decode_strategy: Any) -> dict:
        """the decode loop over ``decode_strategy``"""


class EoleTranslator(Translator, Protocol):
    """eole's ``Translator`` and ``GeneratorLM``, as ``eole.translator`` uses them."""

    _tgt_eos_idx: list
    """the end tokens"""
    top_k: int
    """random sampling from the k best (0: beam search)"""
    top_p: float
    """nucleus sampling (0: beam search)"""

    def _predict_batch_with_strategy(self, batch: dict, decode_strategy: Any) -> dict:
        """the decode loop over ``decode_strategy``"""


@dataclass(frozen=True)
class Contract:
    """One toolkit's contract: the protocols its beam search meets once built and once started, and those its
    translator meets."""

    toolkit: Toolkit
    beam: tuple
    started_beam: tuple
    translator: tuple


OPENNMT_PY_CONTRACT = Contract(OPENNMT_PY, (OpenNMTBeam,), (StartedBeam,), (OpenNMTTranslator,))
EOLE_CONTRACT = Contract(EOLE, (EoleBeam,), (EoleStartedBeam,), (EoleTranslator,))


# ---------------------------------------------------------------------------------------------------- the check
@functools.lru_cache(maxsize=None)
def members(protocol: type) -> tuple[tuple[str, Any], ...]:
    """``(name, annotation)`` of each attribute and method ``protocol`` declares, its bases' included (a method's
    annotation is None)."""
    found: dict[str, Any] = {}
    for cls in reversed(protocol.__mro__):
        if cls is object or cls is Protocol or not getattr(cls, "_is_protocol", False):
            continue
        found.update(vars(cls).get("__annotations__", {}))
        found.update({name: None for name, value in vars(cls).items()
                      if callable(value) and (not name.startswith("__") or name == "__len__")})
    return tuple(found.items())


def missing(obj, protocols: tuple, prefix: str = "") -> list[str]:
    """The members of ``protocols`` that ``obj`` lacks, in declaration order; an attribute whose annotation is
    itself a protocol is checked against it too (``global_scorer.alpha``)."""
    lacking = []
    for protocol in protocols:
        for name, annotation in members(protocol):
            if not hasattr(obj, name):
                lacking.append(prefix + name)
            elif getattr(annotation, "_is_protocol", False):
                lacking += missing(getattr(obj, name), (annotation,), f"{prefix}{name}.")
    return list(dict.fromkeys(lacking))


def check(obj, protocols: tuple, toolkit: Toolkit) -> None:
    """Raise a ``ContractError`` if ``obj`` lacks a member of ``protocols``: one line naming ``obj``'s toolkit
    class, what it lacks, the version followed and the one installed."""
    lacking = missing(obj, protocols)
    if not lacking:
        return
    raise ContractError(f"{toolkit.name}'s {_toolkit_class(obj, toolkit)} has no {', '.join(lacking)}, which "
                        f"onmt-optimal uses: it follows {toolkit.name} {toolkit.version} "
                        f"(installed: {toolkit.installed()})")


def _toolkit_class(obj, toolkit: Toolkit) -> str:
    """The name of ``obj``'s nearest class that is the toolkit's own (its module under ``toolkit.package``)."""
    for cls in type(obj).__mro__:
        if cls.__module__.split(".")[0] == toolkit.package:
            return f"{cls.__name__} ({cls.__module__})"
    return type(obj).__name__
