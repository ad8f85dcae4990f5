"""The rows a pruning decode loop runs (``-prune_dead``: ``search.dead``), for OpenNMT-py's and eole's loops.

Both translators' ``_decode_needed_rows`` keep the decoder's state at the rows decoded last (``rows``, in
order), not the beam's ``B * beam``. Per step, ``NeededRows`` gives the decoder its inputs at those rows
(``inputs``), spreads its log-probabilities back over the beam's rows (``log_probs``: ``search.dead.spread``), and,
once the beam has chosen its parents (``select_indices``), says which rows of the state the next step reads
(``state_rows``): ``where[select_indices[rows]]``, ``where`` being each decoded row's place in the state, one
gather as stock's reorder. A needed row's parent was decoded (its bound is at least its child's, so it was
needed); the other rows read row 0 of the state, and their log-probabilities, at most 0, are all the proof asks.
"""
from __future__ import annotations

import torch

from onmt_optimal.search import dead


def rows_of(tensors, index: torch.Tensor):
    """``tensors`` (a tensor, or a tuple of them: an encoder's output) at the rows ``index``."""
    return tuple(x[index] for x in tensors) if isinstance(tensors, tuple) else tensors[index]


class NeededRows:
    """The rows of one batch's pruning decode; ``search``: the beam (``LineageBeamSearch`` that ``prunes``).

    ``rows``: the rows the next step decodes (``search.rows_to_decode``, which also counts each example's skipped
    rows: it is asked once a step, as the loop decodes exactly these)."""

    def __init__(self, search, device):
        self.search, self.device = search, device
        self.rows = self._next_rows()
        self._scores = None  # the (B * beam, V) log-probabilities the beam reads (``search.dead.spread``)
        self._total, self._everything = 0, True

    def _next_rows(self) -> torch.Tensor:
        return self.search.rows_to_decode(self.device, dead.LEAST_ROWS)[0]

    def inputs(self, decoder_input: torch.Tensor, memory, lengths: torch.Tensor) -> tuple:
        """The step's decoder input, encoder memory and source lengths (each ``B * beam`` rows) at ``rows``."""
        self._total = self.search.alive_seq.shape[0]
        self._everything = self.rows.shape[0] == self._total  # every row decoded, in order
        if self._everything:
            return decoder_input, memory, lengths
        return decoder_input[self.rows], rows_of(memory, self.rows), lengths[self.rows]

    def log_probs(self, log_probs: torch.Tensor) -> torch.Tensor:
        """The decoded rows' log-probabilities as the ``(B * beam, V)`` tensor the beam reads."""
        if self._everything:
            return log_probs
        self._scores = dead.spread(self._scores, self.rows, log_probs, self._total)
        return self._scores

    def state_rows(self, select_indices: torch.Tensor) -> torch.Tensor:
        """After the beam's step: the rows of the decoder's state the next step reads (``rows`` moves on)."""
        where = None
        if not self._everything:
            where = torch.zeros(self._total, dtype=torch.long, device=self.device)
            where[self.rows] = torch.arange(self.rows.shape[0], device=self.device)
        self.rows = self._next_rows()
        return select_indices[self.rows] if where is None else where[select_indices[self.rows]]
