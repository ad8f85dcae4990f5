"""A batch's search, built the way both toolkits build their own: its length limit, the certified beam search,
and the beam of one item that needs no core.

OpenNMT-py 3.5.1's ``Translator.translate_batch`` and eole 0.6.4's ``Translator`` build their ``BeamSearch`` from
the same translator attributes; ``build`` makes the certified one (``adapter.beam_search``) from them, with
the rules and host of ``options.Options``, so that a search with and without the new flags runs the very same
beam. A beam of one item needs no core (``search.beam_of_one``): ``beam_of_one`` says when a decode may run the
toolkit's own beam search instead, and ``beam_of_one_answers`` scores its answers under every rule.
"""
from __future__ import annotations

import torch

from onmt_optimal.search import beam_of_one as one


def max_length(translator, batch) -> int:
    """The decode's ``T``: the toolkit's own limit (``translate_batch`` of OpenNMT-py 3.5.1, of eole 0.6.4's
    ``Translator``), so that a search with and without the new flags runs the very same beam."""
    if translator.max_length_ratio > 0:
        return int(min(translator.max_length, batch["src"].size(1) * translator.max_length_ratio + 5))
    return translator.max_length


#: the beam search's arguments that both toolkits' translators hand over as they hold them, by the attribute that
#: holds each (the same in OpenNMT-py 3.5.1 and eole 0.6.4; ``contract.Translator`` lists what is read of one)
AS_HELD = {"pad": "_tgt_pad_idx", "bos": "_tgt_bos_idx", "eos": "_tgt_eos_idx", "unk": "_tgt_unk_idx",
           "start": "_tgt_start_with", "n_best": "n_best", "global_scorer": "global_scorer",
           "min_length": "min_length", "block_ngram_repeat": "block_ngram_repeat",
           "exclusion_tokens": "_exclusion_idxs", "stepwise_penalty": "stepwise_penalty", "ratio": "ratio",
           "ban_unk_token": "ban_unk_token"}


def build(cls, translator, search, batch_size: int, max_length: int, attn_debug: bool):
    """``cls`` (a ``beam_search.LineageBeamSearch``) built as both toolkits' translators build their own beam search
    (``AS_HELD``, then the decode's batch size, length limit and attention), with ``search``'s rules and host."""
    held = {argument: getattr(translator, attribute) for argument, attribute in AS_HELD.items()}
    return cls(translator.beam_size, batch_size=batch_size, max_length=max_length,
               return_attention=attn_debug or translator.replace_unk, rules=search.rules, host=search.host, **held)


def beam_of_one(translator, search, attn_debug: bool) -> bool:
    """Does the toolkit's own beam search answer for every rule (``search.beam_of_one``, proved there)? With a
    beam of one item, one answer (``n_best``), and options that change neither the answer's score nor its path's
    state: no length or coverage penalty (the toolkit's score is then the exact log p), no n-gram blocking (the
    toolkit does not carry its state along when examples leave; the core does), no forced target prefix
    (``tgt_file_prefix``: eole restarts the score where it ends), no ``-ratio`` stop of the toolkit's, no
    attention handed back."""
    t, scorer = translator, translator.global_scorer
    return (search.beam_of_one and t.beam_size == 1 and t.n_best == 1 and not scorer.has_len_pen
            and not scorer.has_cov_pen and t.block_ngram_repeat == 0 and not t.tgt_file_prefix
            and not t.ratio > 0 and not (attn_debug or t.replace_unk))


def beam_of_one_answers(translator, search, batch, results, eos: set, T: int | None = None) -> tuple[list, list]:
    """``(stats, records)`` of ``results``, the toolkit's own decode of ``batch`` with a beam of one
    (``beam_of_one``), as ``beam_search.LineageBeamSearch`` gives them: per example the first rule's ``Record``,
    and per example, per rule of ``search``, its ``Record`` with the 1-best ``tokens`` (without its end token,
    one of ``eos``); each example's score in ``results`` becomes the first rule's. One read of the device for the
    batch (the tokens and ``|x|``), then the scoring's one copy there and one read (``beam_of_one.records``).
    ``T``: the decode's length limit, if not ``max_length``'s (a decoder-only model's is the toolkit's own)."""
    predictions = [answer[0] for answer in results["predictions"]]
    B = len(predictions)
    steps = [p.numel() for p in predictions]
    flat = torch.cat([batch["srclen"].view(B).to(predictions[0]), *predictions]).tolist()
    tokens, at = [], B
    for n in steps:
        tokens.append(flat[at:at + n])
        at += n
    ended = [row[-1] in eos for row in tokens]
    log_prob = [float(answer[0]) for answer in results["scores"]]
    scored = one.records(search.rules, log_prob, steps, ended, flat[:B],
                         max_length(translator, batch) if T is None else T, predictions[0].device)
    out = [[record.with_tokens(row[:-1] if end else row) for record in per_rule]
           for row, per_rule, end in zip(tokens, scored, ended)]
    results["scores"] = [[per_rule[0].score] for per_rule in out]
    return [per_rule[0] for per_rule in out], out

