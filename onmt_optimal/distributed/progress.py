"""Sentences done across all workers, for the progress bar.

``Progress`` is a tiny Ray actor (no CPU reserved): each part reports the sentences of each batch it
translates; a part that starts again (its worker died and Ray re-ran it) starts its count from zero, so the
total never counts a line twice. ``starts`` counts part starts, so ``starts - parts`` is the number of parts
redone.
"""
from __future__ import annotations


class Progress:
    def __init__(self):
        self._done: dict = {}
        self._starts = 0

    def start(self, part) -> None:
        self._done[part] = 0
        self._starts += 1

    def add(self, part, n: int) -> None:
        self._done[part] = self._done.get(part, 0) + n

    def snapshot(self) -> tuple[int, int]:
        """(sentences done, part starts)."""
        return sum(self._done.values()), self._starts
