import os

import pytest

import tracejit


@pytest.fixture(autouse=True, scope="session")
def _enable_checks():
    # Every test re-derives program types after tracing and after every pass.
    tracejit.config.update("enable_checks", True)
    yield
