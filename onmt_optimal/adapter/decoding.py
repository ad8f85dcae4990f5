"""``RuleDecoding``: the sessions' decode (``opennmt.session.Session``, ``eole.session.EoleSession``): one source
file, any set of rules sharing one beam, per-line records with their texts, in input order."""
from __future__ import annotations

from onmt_optimal.adapter.lines import ordered, with_texts
from onmt_optimal.options import Options
from onmt_optimal.search.transfer import AUTO


class RuleDecoding:
    """``decode`` for a loaded model of either toolkit (``opennmt.session.Session``,
    ``eole.session.EoleSession``), which supplies ``translator`` (a ``translator.RecordKeeping``), ``vocabs``,
    ``infer(src)`` and ``detokenize`` (its reverse transforms, or None)."""

    #: where ``decode``'s search keeps its bookkeeping (``Options.host``): "auto", on the host next to a
    #: CUDA model; None, next to the model
    host = AUTO
    #: a beam of one item may be the toolkit's own search (``Options.beam_of_one``); False: the core's
    beam_of_one = True

    def decode(self, src, beam_size: int, rules: list, progress=None) -> list[list[dict]]:
        """Decode ``src`` once with ``rules`` (sharing one beam): ``result[line][rule]`` is that rule's record
        (``tokens``, ``text``, ``score``, ``log_prob``, ``length``, ``steps``, ``stop_reason``, ...).
        ``progress``, if given, is called with the number of sentences of each batch once translated (e.g. a
        tqdm bar's ``update``)."""
        translator = self.translator
        search = Options(rules=tuple(rules), collect=True, host=self.host, beam_of_one=self.beam_of_one)
        with translator.decoding(search, beam_size, progress):
            self.infer(src)
        return with_texts(ordered(translator._rule_results), self.vocabs["tgt"].ids_to_tokens, self.detokenize)
