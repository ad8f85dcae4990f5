"""The post-import hook both adapters install at interpreter start (``onmt_optimal.pth``): patch a toolkit
when a process imports it.

Kept tiny and free of heavy imports, since every Python process of the environment loads it. An adapter
registers, per module name, which function of its ``patch`` module runs once that module has finished
executing (``install``); one finder in ``sys.meta_path`` serves every adapter. Nothing happens in processes
that never import a registered module. ``ONMT_OPTIMAL_DISABLE`` set to a true value (``1``, ``true``, ``yes``,
``on``, any case) gives the stock toolkits in a process; ``0``, ``false``, ``no``, ``off`` or an empty value keep
the plugin on.
"""
import importlib.abc
import os
import sys

TRUE_VALUES = ("1", "true", "yes", "on")

#: module name -> (the adapter's ``load_patch``, the patch function to run after the module, what to run before)
_HOOKS: dict = {}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        load_patch, function, before = self._hook
        if before is not None:
            before()
        self._loader.exec_module(module)
        getattr(load_patch(), function)()

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
    """True when ``ONMT_OPTIMAL_DISABLE`` holds a true value (1/true/yes/on); ``0``/``false``/``no`` do not."""
    return os.environ.get("ONMT_OPTIMAL_DISABLE", "").strip().lower() in TRUE_VALUES


def install(hooks: dict, load_patch, before_apply=None) -> None:
    """Once module ``name`` of ``hooks`` has executed, run ``load_patch().<hooks[name]>()``; ``before_apply``
    (e.g. warning filters) runs just before the module whose function is ``apply`` executes."""
    if disabled():
        return
    for name, function in hooks.items():
        _HOOKS[name] = (load_patch, function, before_apply if function == "apply" else None)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
