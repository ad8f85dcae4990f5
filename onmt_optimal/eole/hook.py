"""Post-import hook, run at interpreter start by ``onmt_optimal.pth``: patch eole's modules as they are imported.

Each module of eole that ``onmt_optimal.eole.patch`` (or ``repairs``) changes is registered by name (``MODULES``); once that module
has finished executing, the patch of that module alone runs (``onmt_optimal.import_hook``, shared with the
OpenNMT-py adapter). So ``import eole`` loads what stock eole loads and nothing more (no torch), and warnings
are stock's: a process patches exactly the modules it imports. Nothing happens in processes that never import
eole. ``ONMT_OPTIMAL_DISABLE`` set to a true value (``1``, ``true``, ``yes``, ``on``) gives stock eole.
"""
from onmt_optimal.import_hook import install

#: eole's module -> the function of ``onmt_optimal.eole.patch`` that patches it
MODULES = {
    "eole.predict": "patch_predict",
    "eole.bin.run.predict": "patch_predict_command",
}


def _patch():
    from onmt_optimal.eole import patch

    return patch


#: eole's module -> the function of ``onmt_optimal.eole.repairs`` that repairs it
REPAIR_MODULES = {
    "eole.inputters.dynamic_iterator": "patch_dynamic_iterator",
    "eole.inputters.text_corpus": "patch_text_corpus",
    "eole.inference_engine": "patch_inference_engine",
}


def _repairs():
    from onmt_optimal.eole import repairs

    return repairs


#: eole's server modules (``eole serve``) -> the function of ``onmt_optimal.eole.server`` that patches it
SERVER_MODULES = {
    "eole.server.model": "patch_server_model",
    "eole.server.app": "patch_server_app",
    "eole.bin.run.serve": "patch_serve_command",
    "eole.server.streaming": "patch_streaming",
}


def _server():
    from onmt_optimal.eole import server

    return server


install(MODULES, _patch)
install(REPAIR_MODULES, _repairs)
install(SERVER_MODULES, _server)
