"""Cleaning text the way the shipped models' training data was cleaned, and undoing Moses tokenization for BLEU.

One function per job, shared by every tool that reads raw corpus files (``scripts/prepare_data.py``,
``main_job.py``, ``reproduce.py``, ``bench.py``, ``python -m onmt_optimal ratio --unescape-moses``), so that a
source line reaches the model exactly as the training data did; ``clean_file`` writes a cleaned copy of a file.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

# Moses escapes as written by escape-special-chars.perl; "&amp;" must come last (one level is undone).
MOSES_ENTITIES = [
    ("&bar;", "|"), ("&#124;", "|"),
    ("&lt;", "<"), ("&gt;", ">"),
    ("&bra;", "["), ("&ket;", "]"),
    ("&#91;", "["), ("&#93;", "]"),
    ("&apos;", "'"), ("&quot;", '"'),
    ("&amp;", "&"),
]
# Moses aggressive-hyphen / number-separator markers: " @-@ " -> "-", etc.
_MOSES_AT = re.compile(r"\s*@([-,.])@\s*")
_SPACES = re.compile(r"\s+")


# Any one of those escapes or joiners: how ``moses_escaped`` tells a Moses-escaped file.
_MOSES_ANY = re.compile("|".join([re.escape(entity) for entity, _ in MOSES_ENTITIES] + [r"\s@[-,.]@\s"]))


def moses_escaped(lines: list[str]) -> tuple[int, list[str]]:
    """How many of ``lines`` carry a Moses escape (``&apos;``, ``@-@``, ...), and the distinct escapes seen (at
    most three, in order of first appearance): (0, []) for text that ``unescape_moses`` leaves as it is."""
    count, seen = 0, []
    for line in lines:
        if "&" not in line and "@" not in line:
            continue
        found = _MOSES_ANY.findall(line)
        if found:
            count += 1
            for escape in found:
                escape = escape.strip()
                if escape not in seen and len(seen) < 3:
                    seen.append(escape)
    return count, seen


# How a line shows that it was split into tokens (``TOKENIZED``), or that it is running text (``DETOKENIZED``).
# Space-tokenized: a clitic split off ("don 't", "it 's"), punctuation standing alone (" ,", " ." at the end),
# a bracket followed or preceded by a space ("( ", " )"). Running text: punctuation against the word before it
# ("here.", "it's"). SentencePiece: a piece's word-start mark "▁". BPE: subword-nmt's joiner "@@ ".
SPACE_TOKENIZED = "space-tokenized (\"don 't\", \" ,\", \"( \")"
TOKENIZED = {
    SPACE_TOKENIZED: re.compile(r"\w n't\b|\w '(?:s|t|re|ve|ll|d|m)\b| [.,!?;:](?= |$)|[(\[] \S|\S [)\]]"),
    "split into SentencePiece pieces (\u2581)": re.compile("\u2581"),
    "split into BPE pieces (@@)": re.compile(r"\S@@(?: |$)"),
}
DETOKENIZED = {SPACE_TOKENIZED: re.compile(r"[^\W\d_][.,!?;:](?=[\s)\]\"]|$)|[^\W\d_]'(?:s|t|re|ve|ll|d|m)\b")}


def tokenization(lines: list[str]) -> dict[str, tuple[int, int]]:
    """For each way of ``TOKENIZED``: how many of ``lines`` show it, and how many show the opposite, running
    text (``DETOKENIZED``; for the pieces, a line without the mark)."""
    out = {}
    for name, pattern in TOKENIZED.items():
        shown = sum(1 for line in lines if pattern.search(line))
        opposite = DETOKENIZED.get(name)
        against = (sum(1 for line in lines if opposite.search(line)) if opposite is not None
                   else sum(1 for line in lines if line.strip() and not pattern.search(line)))
        out[name] = (shown, against)
    return out


def unescape_moses(line: str) -> str:
    """Undo Moses tokenizer escapes (HTML entities and ``@-@``-style joiners)."""
    if "@" in line:
        line = _MOSES_AT.sub(r"\1", line)
    if "&" in line:
        for entity, char in MOSES_ENTITIES:
            line = line.replace(entity, char)
    return line


def normalize(line: str, unescape: bool) -> str:
    """Collapse whitespace and optionally unescape Moses entities (the training data's clean-up)."""
    if unescape:
        line = unescape_moses(line)
    return _SPACES.sub(" ", line).strip()


@functools.lru_cache(maxsize=None)
def _detokenizer(lang: str):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


def detokenize(line: str, lang: str = "en") -> str:
    """Moses-detokenize one space-tokenized line (``it 's here .`` -> ``it's here.``), as sacrebleu expects
    its input; entities are left as they are (unescape first)."""
    return _detokenizer(lang).detokenize(line.split(), unescape=False)


def clean_file(src, dst: Path, unescape: bool) -> Path:
    """Write the lines of the raw file ``src`` to ``dst``, each cleaned by ``normalize``; returns ``dst``."""
    lines = Path(src).read_text(encoding="utf-8").splitlines()
    dst.write_text("".join(normalize(line, unescape) + "\n" for line in lines), encoding="utf-8")
    return dst
