# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench peers clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest tests -q -p no:cacheprovider

# Benchmarks compare against peers installed with `make peers`; missing peers are skipped.
# The BLAS benchmark runs with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (in that command alone).
bench: $(STAMP)
	$(PY) -m benchmarks.run_all --skip bench_mlp
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(PY) -m benchmarks.run_all bench_mlp

peers: $(STAMP)
	$(PY) -m pip install -q -e '.[peers]'

clean:
	rm -rf $(VENV) build *.egg-info
