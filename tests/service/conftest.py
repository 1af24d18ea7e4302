"""Service test fixtures: a model repository and an app factory."""

import pytest

from service.app import create_app
from service.config import ServerConfig
from tests.service.models import make_repository


@pytest.fixture(scope="session")
def repository(tmp_path_factory):
    """A read-only repository shared by tests that do not change it."""
    return make_repository(tmp_path_factory.mktemp("repo"))


@pytest.fixture
def make_config(repository):
    def factory(**overrides) -> ServerConfig:
        values = {"model_repository": str(repository), "poll_interval": 0.0, "port": 0}
        values.update(overrides)
        return ServerConfig(**values).validate()
    return factory


@pytest.fixture
async def client(aiohttp_client, make_config):
    """An aiohttp test client for an app serving the shared repository."""
    return await aiohttp_client(create_app(make_config()))
