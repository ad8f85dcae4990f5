"""The files an ``onmt_translate`` run of OpenNMT-py 3.5.1 reads and writes, as ``(flag, path)`` pairs of its
parsed options (the command line and its ``-config`` alike).

It reads every ``-model``, the ``-config`` file, ``-src``, ``-tgt`` (gold scoring), ``-phrase_table``
(``-replace_unk``) and the transforms' files
(subword models and vocabularies, a termbase, a translation memory, a tags dictionary); it writes ``-output``,
``-stats_file``, ``-log_file`` (appended to), ``-dump_beam`` and, at parse time, ``-save_config`` (configargparse
writes it, then exits). ``options.check_run`` refuses a written file that is one of the files read, or another
written one; ``save_config_problem`` does so for ``-save_config``, which is written before any of them.
``own`` is OpenNMT-py's record of the parsed options (``opennmt.options.Settings``, named, not imported: that
module's checks import this one).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onmt_optimal.flags import Flags

#: single-path options whose file the run reads (OpenNMT-py's ``dest`` names; the flag is ``-`` + the name)
READ = ("config", "src", "tgt", "phrase_table", "src_subword_model", "tgt_subword_model", "src_subword_vocab",
        "tgt_subword_vocab", "termbase_path", "tm_path", "tags_dictionary_path")

#: options whose file the run writes (``-save_config`` aside: see ``save_config_problem``)
WRITTEN = ("output", "stats_file", "log_file", "dump_beam")


def reads(own) -> list[tuple[str, str]]:
    """The files the run reads: each ``-model``, then ``READ``, those given."""
    models = own.models or []
    pairs = [("-model", path) for path in ([models] if isinstance(models, str) else models)]
    pairs += [(f"-{name}", getattr(own, name)) for name in READ]
    return [(flag, path) for flag, path in pairs if path and isinstance(path, str)]


def writes(own, flags: Flags) -> list[tuple[str, str]]:
    """The files the run writes, those given (-stats_file is ours: ``flags``)."""
    pairs = [(f"-{name}", getattr(flags if name == "stats_file" else own, name)) for name in WRITTEN]
    return [(flag, path) for flag, path in pairs if path and isinstance(path, str)]


def save_config_problem(own, paths) -> str | None:
    """One line if a ``-save_config`` path (``paths``: configargparse's list) cannot be written
    (``file_checks.check_writable``: a trailing slash, a missing directory) or is a file the run reads, else None:
    ``file_checks.check_distinct``'s refusal, as a line (configargparse writes the file while it parses)."""
    from onmt_optimal import file_checks
    from onmt_optimal.errors import OptionError

    read = reads(own)
    for path in paths or ():
        try:
            file_checks.check_writable("-save_config", str(path))  # (configargparse's own refusal was a traceback)
            file_checks.check_distinct(read, (("-save_config", str(path)),))
        except OptionError as err:
            return str(err)
    return None
