"""Shared pytest set-up: assertions inside the policy contract report their values."""

import pytest

pytest.register_assert_rewrite("hypersched_nb.testing")
