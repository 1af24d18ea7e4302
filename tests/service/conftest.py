"""Service test fixtures: a model repository and an app factory."""

import pytest

from service.app import create_app
from service.config import ServerConfig
from service.manager import ModelManager
from service.metrics import ServingMetrics
from tests.service.models import make_repository


@pytest.fixture(scope="session")
def repository(tmp_path_factory):
    """A read-only repository shared by tests that do not change it."""
    return make_repository(tmp_path_factory.mktemp("repo"))


@pytest.fixture
def make_config(repository):
    def factory(**overrides) -> ServerConfig:
        # grpc_port 0: the default 8500 may be taken on a shared machine.
        values = {
            "model_repository": str(repository),
            "poll_interval": 0.0,
            "port": 0,
            "grpc_port": 0,
        }
        values.update(overrides)
        return ServerConfig(**values).validate()

    return factory


@pytest.fixture
async def client(aiohttp_client, make_config):
    """An aiohttp test client for an app serving the shared repository."""
    return await aiohttp_client(create_app(make_config()))


def manager_config(root, **kw) -> ServerConfig:
    """A validated config serving ``root`` that scans it once."""
    return ServerConfig(model_repository=str(root), poll_interval=0, **kw).validate()


@pytest.fixture
async def manager_for():
    """``await manager_for(root, **settings)``: a started ModelManager (with metrics),
    stopped after the test."""
    managers = []

    async def make(root, **kw):
        m = ModelManager(manager_config(root, **kw), ServingMetrics())
        await m.start()
        managers.append(m)
        return m

    yield make
    for m in managers:
        await m.stop()
