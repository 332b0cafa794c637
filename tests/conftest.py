import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import settings

import tracejit

# CI explores a fixed, reproducible set of hypothesis examples; local runs explore freely.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


# Tests use a private persistent compile cache, never the user's. Set on import, before the test
# modules are collected (a module that compiles at import time wrote to ~/.cache/tracejit), and in
# the environment, for the Python processes tests start (unless a test gives one its own).
_CACHE = tempfile.mkdtemp(prefix="tracejit-test-cache-")        # (private: mode 0700)
tracejit.config.update("compilation_cache_dir", _CACHE)
os.environ["TRACEJIT_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)


@pytest.fixture(autouse=True, scope="session")
def _enable_checks():
    # Every test re-derives program types after tracing and after every pass.
    tracejit.config.update("enable_checks", True)
    yield
