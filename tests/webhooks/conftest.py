import pytest

from annotate.projects.opening import open_labelling
from tests.jobs.test_rq import rq_tasks  # noqa: F401  (fixture: RQ on the local Redis)
from tests.webhooks.receiver import receiver  # noqa: F401  (fixture)


@pytest.fixture
def open_team(team):
    return open_labelling(project=team)
