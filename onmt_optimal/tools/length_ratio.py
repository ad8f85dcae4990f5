"""The length ratio rho of Section 4: how long references are relative to their sources, in model tokens.

``l = rho * |x|`` is where the bounded reward stops paying. The paper estimates rho on the dev set as the average
ratio of reference length to source length (1.27 on NIST Chinese-English) and uses the same rho on test.
Lengths are counted in the tokens the model reads and writes (after its transforms, e.g. SentencePiece
pieces), as ``|x|`` and ``|y|`` are everywhere in this package. With several references, each reference
counts (their lengths are averaged per sentence).
"""
from __future__ import annotations

from dataclasses import dataclass

from onmt_optimal.failures import Fault


class RatioError(Fault, ValueError):
    """Files from which no ratio can be estimated; the message is one line."""


@dataclass
class RatioEstimate:
    corpus: float  # total reference tokens / total source tokens (the default: robust to 1-token sources)
    sentence: float  # mean over sentences of |ref| / |src|
    sentences: int
    option: str = "-length_ratio "  # how the toolkit takes it: "length_ratio=" for transformers and vLLM

    def __str__(self) -> str:
        """One line that starts with the option and the one number it takes (``-length_ratio RHO``, or
        ``length_ratio=RHO``: the corpus ratio), then what that number is; the per-sentence mean is printed for
        comparison, not to be passed."""
        return (f"{self.option}{self.corpus:.4f}  (corpus ratio: reference / source model tokens over "
                f"{self.sentences} sentences; per-sentence mean {self.sentence:.4f}, for comparison only)")


def estimate(src_lengths: list[int], ref_lengths: list[list[int]]) -> RatioEstimate:
    """``ref_lengths[k][i]``: length of reference ``k`` of sentence ``i``. Sentences with an empty source are
    left out (no ratio exists for them)."""
    pairs = []
    for i, src in enumerate(src_lengths):
        if src > 0:
            refs = [stream[i] for stream in ref_lengths]
            pairs.append((src, sum(refs) / len(refs)))
    if not pairs:
        raise RatioError("no sentence with a non-empty source")
    corpus = sum(r for _, r in pairs) / sum(s for s, _ in pairs)
    sentence = sum(r / s for s, r in pairs) / len(pairs)
    return RatioEstimate(corpus, sentence, len(pairs))


def estimate_with_model(session, src_lines: list[str], ref_streams: list[list[str]]) -> RatioEstimate:
    """Estimate rho with the lengths ``session`` (a ``Session``) gives after the model's transforms."""
    return estimate(session.model_lengths(src_lines, "src"),
                    [session.model_lengths(stream, "tgt") for stream in ref_streams])


def estimate_with_tokenizer(name: str, src_lines: list[str], ref_streams: list[list[str]]) -> RatioEstimate:
    """Estimate rho for a transformers or vLLM model with its checkpoint's tokenizer (``name``: a folder or a Hub
    name already in the local cache): ``|x|`` counts the tokens the model reads of a source line (the special
    tokens the tokenizer adds, e.g. Marian's ``</s>``, included, as the attention mask counts them), ``|y|`` those
    of a reference without special tokens (the generated tokens without the end token). Printed as
    ``length_ratio=RHO``, the keyword ``generate`` and ``optimal_beam_search`` take."""
    from onmt_optimal.errors import OptionError

    transformers = transformers_for(name)
    try:
        tok = transformers.AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise OptionError(f"--tokenizer {name}: no tokenizer loads from it ({first})") from None
    src = [len(tok(line)["input_ids"]) if line.strip() else 0 for line in src_lines]
    refs = [[len(tok(text_target=line, add_special_tokens=False)["input_ids"]) for line in stream]
            for stream in ref_streams]
    found = estimate(src, refs)
    found.option = "length_ratio="
    return found


def transformers_for(name: str):
    """The ``transformers`` module, to load the checkpoint ``name`` (a folder, or a Hub name in the local cache);
    one ``OptionError`` line where ``name`` looks like a folder and is none, or transformers is missing."""
    import os

    from onmt_optimal.errors import OptionError

    if os.sep in name and not os.path.isdir(name):
        raise OptionError(f"--tokenizer {name}: no such folder; give the checkpoint's folder")
    try:
        import transformers
    except ImportError:
        raise OptionError("--tokenizer needs transformers: pip install '.[hf]'") from None
    return transformers


def read_lines(flag: str, path: str, unescape: bool = False) -> list[str]:
    """The lines of ``path`` (UTF-8); with ``unescape``, cleaned as the shipped models' training data was
    (``text.normalize``). A file that cannot be read, or is not UTF-8, is a ``RatioError`` naming ``flag``."""
    from pathlib import Path

    from onmt_optimal.adapter import source

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise RatioError(f"{flag} {path}: cannot read it ({err.strerror or type(err).__name__})") from None
    except UnicodeDecodeError as err:
        found = source.first_bad_line(path)
        where = f"line {found[0]} (byte offset {found[1]})" if found else f"byte offset {err.start}"
        raise RatioError(f"{flag} {path}: {where} is not UTF-8 ({err.reason}); convert the file to UTF-8") from None
    if not unescape:
        return lines
    from onmt_optimal.tools.text import normalize

    return [normalize(line, unescape=True) for line in lines]


def read_corpus(src: str, refs: list[str], unescape: bool = False) -> tuple[list[str], list[list[str]]]:
    """``--src`` and ``--refs`` read (``read_lines``), each reference file with one line per source line."""
    src_lines = read_lines("--src", src, unescape)
    streams = [read_lines("--refs", path, unescape) for path in refs]
    for path, stream in zip(refs, streams):
        if len(stream) != len(src_lines):
            raise RatioError(f"--refs {path} has {_lines(len(stream))}, --src {src} has {_lines(len(src_lines))}: "
                             f"one reference a source line")
    return src_lines, streams


def escape_warning(src: str, refs: list[str], src_lines: list[str], streams: list[list[str]]) -> str | None:
    """One line when the files, read without --unescape-moses, carry Moses escapes (``&apos;``, ``@-@``, ...):
    the model's lengths then count the escapes (the shipped TVsub model was trained on unescaped text, and its
    dev set's ratio reads 1.5532 escaped, 1.3059 unescaped). None when no file has one."""
    from onmt_optimal.tools.text import moses_escaped

    found = []
    for flag, path, lines in [("--src", src, src_lines)] + [("--refs", p, s) for p, s in zip(refs, streams)]:
        count, seen = moses_escaped(lines)
        if count:
            found.append(f"{flag} {path} has {count} of {_lines(len(lines))} with Moses escapes ({' '.join(seen)})")
    if not found:
        return None
    return "; ".join(found) + ": add --unescape-moses to count them as the text the model was trained on"


def tokenization_warnings(src: str, refs: list[str], src_lines: list[str], streams: list[list[str]]) -> list[str]:
    """One line for each way of splitting text (``text.TOKENIZED``: space-tokenized, SentencePiece or BPE
    pieces) that the source and the references do not share: one side shows it (on at least four times as many
    lines as show running text) and the other shows running text (as clearly). The lengths then count other
    units on each side, and BLEU compares other forms. Each line names the files and their counts of lines."""
    from onmt_optimal.tools.text import TOKENIZED, tokenization

    def side(counts: tuple[int, int]) -> bool | None:
        shown, against = counts
        return True if shown and shown >= 4 * against else False if against and against >= 4 * shown else None

    files = [("--src", src, src_lines)] + [("--refs", path, stream) for path, stream in zip(refs, streams)]
    counts = [tokenization(lines) for _, _, lines in files]
    out = []
    for name in TOKENIZED:
        mine = side(counts[0][name])
        differ = [k for k in range(1, len(files)) if mine is not None and side(counts[k][name]) is (not mine)]
        if not differ:
            continue
        split, running = ([0], differ) if mine else (differ, [0])

        def say(ks, i):
            return ", ".join(f"{files[k][0]} {files[k][1]} ({counts[k][name][i]} of {_lines(len(files[k][2]))})"
                             for k in ks)

        out.append(f"{say(split, 0)} {'looks' if len(split) == 1 else 'look'} {name} but {say(running, 1)} "
                   f"{'reads' if len(running) == 1 else 'read'} as running text: the lengths count other units on "
                   "each side (and BLEU compares other forms); give the source and the references in one form, as "
                   "the model reads and writes text")
    return out


def _lines(n: int) -> str:
    return f"{n} line" + ("" if n == 1 else "s")
