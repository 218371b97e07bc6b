import pytest

from annotate.projects.opening import open_labelling
from tests.webhooks.receiver import receiver  # noqa: F401  (fixture)


@pytest.fixture
def open_team(team):
    return open_labelling(project=team)
