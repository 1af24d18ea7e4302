"""Triton's logging extension over REST and gRPC, with tritonclient."""

import logging

import pytest

from service.config import ServerConfig
from service.errors import InvalidInput
from service.log_settings import LogSettings
from tests.service import models
from tests.service.serving import ServerThread

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException


@pytest.fixture
def root_logging():
    root = logging.getLogger()
    level, formatters = root.level, [h.formatter for h in root.handlers]
    root.setLevel(logging.INFO)
    yield root
    root.setLevel(level)
    for h, f in zip(root.handlers, formatters):
        h.setFormatter(f)


def test_settings_drive_the_root_logger(root_logging):
    settings = LogSettings()
    assert settings.current() == {
        "log_file": "",
        "log_info": True,
        "log_warning": True,
        "log_error": True,
        "log_verbose_level": 0,
        "log_format": "default",
    }
    assert settings.update({"log_verbose_level": 1})["log_verbose_level"] == 1
    assert root_logging.level == logging.DEBUG
    settings.update({"log_verbose_level": 0, "log_info": False})
    assert root_logging.level == logging.WARNING
    settings.update({"log_warning": False})
    assert root_logging.level == logging.ERROR
    for bad, fragment in (
        ({"log_info": "yes"}, "log_info"),
        ({"log_verbose_level": -1}, "log_verbose_level"),
        ({"log_format": "xml"}, "log_format"),
        ({"log_file": "/etc/passwd"}, "log_file"),
        ({"colour": True}, "unknown"),
    ):
        with pytest.raises(InvalidInput, match=fragment):
            settings.update(bad)
    assert root_logging.level == logging.ERROR  # a refused update changes nothing


def test_over_rest_and_grpc(tmp_path, root_logging):
    models.half_plus_two(tmp_path / "m" / "1")
    config = ServerConfig(model_repository=str(tmp_path), poll_interval=0, port=0).validate()
    with ServerThread(config) as s:
        http = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{s.grpc_port}")
        try:
            assert "logging" in http.get_server_metadata()["extensions"]
            assert http.get_log_settings()["log_info"] is True
            http.update_log_settings({"log_verbose_level": 1})
            assert root_logging.level == logging.DEBUG
            over_grpc = grpc.get_log_settings(as_json=True)["settings"]
            assert over_grpc["log_verbose_level"] == {"uint32_param": 1}
            grpc.update_log_settings({"log_verbose_level": 0, "log_info": False})
            assert root_logging.level == logging.WARNING
            assert http.get_log_settings()["log_info"] is False
            with pytest.raises(InferenceServerException, match="log_format"):
                http.update_log_settings({"log_format": "xml"})
            with pytest.raises(InferenceServerException, match="log_file"):
                grpc.update_log_settings({"log_file": "/tmp/x"})
        finally:
            http.close()
            grpc.close()
