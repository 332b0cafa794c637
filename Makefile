# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench peers fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

# Two pytest workers: one per core of the CI machines (the suite took ~25 minutes in one process).
test: $(STAMP)
	$(PY) -m pytest tests -q -p no:cacheprovider -n 2

# A long differential-fuzzing campaign (issue 12; `make test` runs a fixed seed range):
# N random programs against NumPy and the reference backend, then N/10 random gradient programs
# against finite differences, from seed START on JOBS processes.  Minimized reproducers of any
# mismatch and a summary land in FUZZ_OUT.  Example: make fuzz N=200000 START=1000000
N ?= 20000
START ?= 1000000
JOBS ?= 2
FUZZ_OUT ?= fuzz-out
fuzz: $(STAMP)
	mkdir -p $(FUZZ_OUT)
	$(PY) -m tests.fuzz.program_check --start $(START) --count $(N) --jobs $(JOBS) \
		--out $(FUZZ_OUT)/programs --log $(FUZZ_OUT)/programs.jsonl | tee $(FUZZ_OUT)/programs.txt
	$(PY) -m tests.fuzz.grad_check --start $(START) --count $$(( $(N) / 10 )) --jobs $(JOBS) \
		--out $(FUZZ_OUT)/gradients | tee $(FUZZ_OUT)/gradients.txt

# Benchmarks compare against peers installed with `make peers`; missing peers are skipped.
# The BLAS benchmarks (bench_mlp, bench_blas) run with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (in that command alone).
bench: $(STAMP)
	$(PY) -m benchmarks.run_all --skip bench_mlp --skip bench_blas
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(PY) -m benchmarks.run_all bench_mlp bench_blas

peers: $(STAMP)
	$(PY) -m pip install -q -e '.[peers]'

clean:
	rm -rf $(VENV) build *.egg-info
