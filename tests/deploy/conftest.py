from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


@pytest.fixture(scope="session")
def deploy_dir() -> Path:
    return DEPLOY
