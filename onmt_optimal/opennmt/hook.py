"""Post-import hook, run at interpreter start by ``onmt_optimal.pth``: patch OpenNMT-py when it is imported.

Kept tiny and free of heavy imports, since every Python process of the environment loads it. When the module
``onmt`` finishes executing, ``onmt_optimal.opennmt.patch.apply`` runs; when ``onmt.bin.translate`` does,
``apply_cli`` runs. Nothing happens in processes that never import OpenNMT-py. Set ``ONMT_OPTIMAL_DISABLE=1``
to get stock OpenNMT-py in a process: only a true value (``1``, ``true``, ``yes``, ``on``, any case) disables
it; ``0``, ``false``, ``no``, ``off`` or an empty value keep the plugin on.
"""
import importlib.abc
import os
import sys
import warnings

_HOOKS = {"onmt": "apply", "onmt.bin.translate": "apply_cli"}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        if self._hook == "apply":
            # OpenNMT-py 3.5.1 decorates with torch.cuda.amp.custom_fwd, deprecated since torch 2.4: noise
            # on every run (and before every one-line error message) on a modern torch
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"onmt(\.|$)")
        self._loader.exec_module(module)
        from onmt_optimal.opennmt import patch

        getattr(patch, self._hook)()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        hook = _HOOKS.get(fullname)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, hook)
                return spec
        return None


TRUE_VALUES = ("1", "true", "yes", "on")


def disabled() -> bool:
    """True when ``ONMT_OPTIMAL_DISABLE`` holds a true value (1/true/yes/on); ``0``/``false``/``no`` do not."""
    return os.environ.get("ONMT_OPTIMAL_DISABLE", "").strip().lower() in TRUE_VALUES


def install() -> None:
    if disabled():
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


install()
