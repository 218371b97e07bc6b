import pytest

from tests.api import build_demo


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead):
    """The demo project, open, both reviewers' labels in and a judge run (tests.api's)."""
    return build_demo([reviewer_a, reviewer_b], lead)


@pytest.fixture
def lead(lead):
    """The lead here creates projects (uploads to New project, imports into new slugs): they
    hold the permission to (annotate.projects.access)."""
    from tests.conftest import may_create_projects

    may_create_projects(lead)
    return lead
