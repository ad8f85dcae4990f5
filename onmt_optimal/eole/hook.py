"""Post-import hook, run at interpreter start by ``onmt_optimal.pth``: patch eole when it is imported.

Kept tiny and free of heavy imports, since every Python process of the environment loads it. When the module
``eole`` finishes executing, ``onmt_optimal.eole.patch.apply`` runs; when ``eole.bin.run.predict`` does (the
``eole predict`` command), ``apply_cli`` runs. Nothing happens in processes that never import eole.
``ONMT_OPTIMAL_DISABLE`` works as for OpenNMT-py (``onmt_optimal.opennmt.hook.disabled``): a true value (``1``,
``true``, ``yes``, ``on``) gives stock eole.
"""
import importlib.abc
import os
import sys
import warnings

_HOOKS = {"eole": "apply", "eole.bin.run.predict": "apply_cli"}
TRUE_VALUES = ("1", "true", "yes", "on")

#: what eole 0.6.4 prints on import without its compiled extension or flash-attn (harmless on CPU)
QUIET = (r"Could not import flash_attn", r"Could not import eole\._ops")


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        if self._hook == "apply":
            for message in QUIET:
                warnings.filterwarnings("ignore", message=message, category=RuntimeWarning)
        self._loader.exec_module(module)
        from onmt_optimal.eole import patch

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


def disabled() -> bool:
    return os.environ.get("ONMT_OPTIMAL_DISABLE", "").strip().lower() in TRUE_VALUES


def install() -> None:
    if disabled():
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


install()
