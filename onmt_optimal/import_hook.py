"""The post-import hook both adapters share: patch a toolkit when a process imports it.

``onmt_optimal.pth`` (in site-packages) calls ``boot`` at the start of every Python process of the environment,
so ``boot`` and this module import nothing but ``os`` and ``sys`` (both loaded by then) and do three things:
read ``ONMT_OPTIMAL_DISABLE``, fill a dict, put one finder first in ``sys.meta_path``. That finder answers every
import with a dict lookup and leaves it alone, except for the registered module names. When a process first
imports a toolkit's top-level module (``ADAPTERS``: ``onmt``, ``eole``), the finder imports that adapter's
``hook`` module, which registers, per module name, which function of its ``patch`` module runs once that module
has finished executing (``install``); one finder serves every adapter. A process that never imports a toolkit
loads no adapter. ``ONMT_OPTIMAL_DISABLE`` set to a true value (``1``, ``true``, ``yes``, ``on``, any case,
spaces around ignored) gives the stock toolkits in a process; ``0``, ``false``, ``no``, ``off`` or an empty value
keep the plugin on. Any other value keeps it on too, and the process says so in one warning line on stderr when
it first imports a toolkit (``_warn_unknown``; a process that imports none stays silent).
``withdraw`` takes the finder out again (stock OpenNMT-py for comparisons: ``onmt_optimal.opennmt.stock``).

In a toolkit's command (``onmt_translate``, ``eole``, ``onmt-optimal`` or ``python -m onmt_optimal``:
``sys.argv``, set before the .pth runs) ``boot`` also makes a Ctrl-C that no code caught (one that arrives
while the command's modules import, before ``failures.run`` takes over) one line, ``PROG: error: interrupted
(Ctrl-C)``, instead of a traceback (``_one_line_interrupt``); the process still ends as killed by SIGINT. Its
SIGINT handler remembers each Ctrl-C (``_remember_interrupts``), so one that an import swallowed (torch catches
every exception while its library loads: the command decoded on) is raised again after the toolkit's module
(``_PatchingLoader``) or as the command's run starts (``failures.run``). Any other process is left as it was.

Each patch may run any number of times (a toolkit's modules imported afresh are patched again): it ``mark``s
every function or class it puts in the toolkit's place and leaves an attribute that is already ``ours`` as it is.
"""
import os
import sys

TRUE_VALUES = ("1", "true", "yes", "on")
#: the values of ``ONMT_OPTIMAL_DISABLE`` that keep the plugin on without a word
FALSE_VALUES = ("0", "false", "no", "off", "")

#: a toolkit's top-level module -> its adapter's hook module, imported when a process first imports the toolkit
ADAPTERS = {"onmt": "onmt_optimal.opennmt.hook", "eole": "onmt_optimal.eole.hook"}

#: module name -> (the adapter's ``load_patch``, the patch function to run after the module, what to run before)
_HOOKS: dict = {}
#: the entries of ``ADAPTERS`` whose hook module ``boot`` registered and no import has loaded yet
_PENDING: dict = {}

#: set on each function or class a patch puts in a toolkit's place
OURS = "_onmt_optimal"


def ours(thing) -> bool:
    """True if ``thing`` is one a patch put in a toolkit's place (``mark``)."""
    return getattr(thing, OURS, False)


def mark(thing):
    """``thing``, marked as ``ours``."""
    setattr(thing, OURS, True)
    return thing


def around(original):
    """A decorator: ``replacement(original, *args)`` in ``original``'s place (its name and docstring), ``mark``ed:
    how a patch wraps a toolkit's function, the patches of the commands' repairs and the servers' alike."""
    import functools

    def make(replacement):
        @functools.wraps(original)
        def replaced(*args, **kwargs):
            return replacement(original, *args, **kwargs)
        return mark(replaced)
    return make


class _PatchingLoader:
    """The toolkit's own loader, with the adapter's patch function run right after the module executes."""

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
        if swallowed_interrupt():
            raise KeyboardInterrupt
        getattr(load_patch(), function)()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder:
    """First in ``sys.meta_path``: finds nothing itself; for a registered module, wraps the loader that the
    finders after it give."""

    def find_spec(self, fullname, path, target=None):
        adapter = _PENDING.pop(fullname, None)
        if adapter is not None:
            _warn_unknown()
            __import__(adapter)  # the adapter's hook module registers its modules (``install``)
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


def _warn_unknown() -> None:
    """One line on stderr, once per process, if ``ONMT_OPTIMAL_DISABLE`` holds a value that is neither true nor
    false (``TRUE_VALUES``, ``FALSE_VALUES``): the plugin stays on."""
    global _WARNED
    value = os.environ.get("ONMT_OPTIMAL_DISABLE", "")
    if _WARNED or value.strip().lower() in TRUE_VALUES + FALSE_VALUES:
        return
    _WARNED = True
    sys.stderr.write(f"onmt-optimal: warning: ONMT_OPTIMAL_DISABLE={value!r} is not understood (1, true, yes or on "
                     f"turn the plugin off; 0, false, no, off or empty keep it on): the plugin stays on\n")


_WARNED = False


def _ensure_finder() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def boot() -> None:
    """What ``onmt_optimal.pth`` runs at interpreter start: each adapter's hook module is imported when the
    process first imports its toolkit (unless ``ONMT_OPTIMAL_DISABLE`` is true). Imports nothing itself."""
    if disabled():
        return
    prog = _command()
    if prog is not None:
        _one_line_interrupt(prog)
        _remember_interrupts()
    for top, adapter in ADAPTERS.items():
        if top not in _HOOKS and top not in sys.modules:
            _PENDING[top] = adapter
    _ensure_finder()


#: console scripts (``sys.argv[0]``'s base name) whose uncaught Ctrl-C is one line
COMMANDS = ("onmt_translate", "eole", "onmt-optimal")


def _command() -> str | None:
    """The program name of this process if it is one of ``COMMANDS`` (with eole's subcommand), else None."""
    argv = getattr(sys, "argv", None) or [""]
    name = os.path.basename(argv[0])
    orig = getattr(sys, "orig_argv", [])
    if argv[0] == "-m" and "-m" in orig and orig[orig.index("-m") + 1:][:1] == ["onmt_optimal"]:
        name = "onmt-optimal"  # python -m onmt_optimal (sys.argv[0] is "-m" until the module runs)
    if name not in COMMANDS:
        return None
    if name != "onmt_translate" and len(argv) > 1 and not argv[1].startswith("-"):
        return f"{name} {argv[1]}"
    return name


def _one_line_interrupt(prog: str) -> None:
    """``sys.excepthook`` writes an uncaught ``KeyboardInterrupt`` as one line; anything else as before."""
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        if isinstance(kind, type) and issubclass(kind, KeyboardInterrupt):
            sys.stderr.write(f"{prog}: error: interrupted (Ctrl-C)\n")
            sys.stderr.flush()
            return
        previous(kind, value, traceback)

    sys.excepthook = excepthook


#: the Ctrl-Cs a command received (``_remember_interrupts``) that no one has asked about since
_INTERRUPTS: list = []


def _remember_interrupts() -> None:
    """A command's SIGINT handler is Python's own (``KeyboardInterrupt``) that also remembers the signal: an
    import that catches every exception (torch's, while its library loads) swallows the ``KeyboardInterrupt``,
    and the command decoded on; ``swallowed_interrupt`` says it happened. ``_signal`` is built in and already
    initialised: nothing is imported."""
    import _signal

    if _signal.getsignal(_signal.SIGINT) is not _signal.default_int_handler:
        return  # (a shell's background job ignores SIGINT; another handler is not ours to wrap)

    def remembering(signum, frame):
        _INTERRUPTS.append(signum)
        _signal.default_int_handler(signum, frame)

    _signal.signal(_signal.SIGINT, remembering)


def swallowed_interrupt() -> bool:
    """Whether a Ctrl-C arrived since the last call (``_remember_interrupts``); the caller raises the
    ``KeyboardInterrupt`` again where its own went missing: after a toolkit module's import (``_PatchingLoader``)
    and as a command's run starts (``failures.run``)."""
    found = bool(_INTERRUPTS)
    _INTERRUPTS.clear()
    return found


def install(hooks: dict, load_patch, before_apply=None) -> None:
    """Once module ``name`` of ``hooks`` has executed, run ``load_patch().<hooks[name]>()``; ``before_apply``
    (e.g. warning filters) runs just before the module whose function is ``apply`` executes."""
    if disabled():
        return
    for name, function in hooks.items():
        _HOOKS[name] = (load_patch, function, before_apply if function == "apply" else None)
    _ensure_finder()


def withdraw() -> None:
    """Take the finder out of ``sys.meta_path`` and forget every registration: no module imported afterwards in
    this process is patched (modules already imported stay as they are)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    _HOOKS.clear()
    _PENDING.clear()
