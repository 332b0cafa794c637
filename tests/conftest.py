import os

import pytest
from hypothesis import settings

import tracejit

# CI explores a fixed, reproducible set of hypothesis examples; local runs explore freely.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True, scope="session")
def _enable_checks(tmp_path_factory):
    # Every test re-derives program types after tracing and after every pass.
    tracejit.config.update("enable_checks", True)
    # Tests use a private persistent compile cache, never the user's.
    cache = tmp_path_factory.mktemp("tracejit-cache")
    os.chmod(cache, 0o700)
    tracejit.config.update("compilation_cache_dir", str(cache))
    yield
