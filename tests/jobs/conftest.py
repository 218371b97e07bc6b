import pytest

from tests.api import build_demo


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead):
    """The demo project, open, both reviewers' labels in and a judge run (tests.api's)."""
    return build_demo([reviewer_a, reviewer_b], lead)
