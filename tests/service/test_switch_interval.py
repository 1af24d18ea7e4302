"""``--switch-interval-micros``: the interpreter's thread switch interval, set at start."""

import sys

import pytest

from service import cli
from service.config import ConfigError, ServerConfig


@pytest.fixture
def restored_interval():
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def test_set_switch_interval_sets_microseconds_and_zero_leaves_it(restored_interval):
    cli.set_switch_interval(0)
    assert sys.getswitchinterval() == restored_interval
    cli.set_switch_interval(500)
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    cli.set_switch_interval(0)
    assert sys.getswitchinterval() == pytest.approx(0.0005)


def test_the_default_leaves_pythons_interval():
    assert ServerConfig().switch_interval_micros == 0


def test_the_server_sets_the_interval_before_it_starts(monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "set_switch_interval", seen.append)
    monkeypatch.setattr(cli, "tune_garbage_collector", lambda n: None)
    monkeypatch.setattr(cli, "set_intra_op_threads", lambda n: [])  # (process-wide)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # the loop choice then fails: exit 2
    config = ServerConfig(switch_interval_micros=750, event_loop="uvloop")
    assert cli.run_server(config) == 2
    assert seen == [750]


def test_switch_interval_setting_is_validated_and_read_from_flag_and_env(monkeypatch):
    for bad in (-1, 1_000_001):
        with pytest.raises(ConfigError, match="switch_interval_micros"):
            ServerConfig(switch_interval_micros=bad).validate()
    parse = cli.build_parser().parse_args
    assert (
        cli.resolve_config(parse(["--switch-interval-micros", "300"])).switch_interval_micros == 300
    )
    monkeypatch.setenv("FLOWSERVE_SWITCH_INTERVAL_MICROS", "2000")
    assert cli.resolve_config(parse([])).switch_interval_micros == 2000
