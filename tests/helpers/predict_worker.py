"""Many ``eole predict`` runs in one Python process (one a side), as ``translate_worker`` does for
``onmt_translate``: each run calls eole's own ``eole.bin.main.main`` with ``sys.argv = ["eole", "predict",
*args]``, exactly what the ``eole`` console script does. Our side has the import hook active (eole is patched on
import); the stock side runs with ``ONMT_OPTIMAL_DISABLE=1``: stock eole 0.6.4.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__:  # imported by the tests: ``helpers.predict_worker``
    from . import translate_worker
else:  # the worker process runs this file: its folder, ``tests/helpers``, is the first entry of sys.path
    import translate_worker


class Worker(translate_worker.Worker):
    """``eole predict`` in this file's process."""

    script = Path(__file__).resolve()

    def predict(self, *args):
        return self.run("predict", *args)


def serve(stock: bool) -> None:
    answers = translate_worker.answers_channel()
    from eole.bin.main import main

    if stock:
        assert os.environ.get("ONMT_OPTIMAL_DISABLE"), "the stock side runs with ONMT_OPTIMAL_DISABLE=1"
        assert "onmt_optimal.eole.patch" not in sys.modules
    else:
        import eole.predict

        assert hasattr(eole.predict.get_infer_class, "__wrapped__"), "the import hook did not patch eole"
    # translate_worker's _run_one sets sys.argv = ["onmt_translate", *argv]; eole's main reads sys.argv[1:]
    translate_worker.run_jobs(main, answers)


if __name__ == "__main__":
    serve(stock=sys.argv[1:] == ["--stock"])
