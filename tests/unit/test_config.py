"""Target resolution: --url, --target, INFERCTL_TARGET, the config file, and the local default."""

from __future__ import annotations

import pytest

from inferctl.errors import ConfigError, LocalEngineError
from inferctl.local.state import DEFAULT_PORT, EngineState, state_file, write_state
from inferctl.ops.targets import list_targets, resolve_target


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("INFERCTL_TARGET", raising=False)
    return tmp_path


def write_config(tmp_path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")


def test_default_is_local_on_default_port():
    t = resolve_target()
    assert t.name == "local" and t.local and t.url == f"http://127.0.0.1:{DEFAULT_PORT}"


def test_local_port_comes_from_state_file():
    write_state(EngineState(pid=1, port=8555, model_dir="/m", served_model_name="tiny", log_path="/l",
                            started_at=0.0))
    assert resolve_target().url == "http://127.0.0.1:8555"


def test_corrupt_state_file_is_a_clear_error():
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text("{not json", encoding="utf-8")
    with pytest.raises(LocalEngineError, match="corrupt.*inferctl local down"):
        resolve_target()


def test_url_wins_and_is_normalised():
    t = resolve_target("whatever", "http://192.0.2.5:8000/v1/")
    assert t.name == "url" and t.url == "http://192.0.2.5:8000" and t.auth == "none"


def test_url_without_scheme_is_rejected():
    with pytest.raises(ConfigError, match="http:// or https://"):
        resolve_target(url="192.0.2.5:8000")


def test_named_target_from_config(tmp_path):
    write_config(tmp_path, """
default_target = "lab"
[targets.lab]
url = "http://192.0.2.5:8000"
auth = "bearer"
token_env = "LAB_TOKEN"
model = "gemma"
[targets.l4]
url = "https://gemma-l4.a.run.app"
auth = "google-id-token"
""")
    t = resolve_target()
    assert (t.name, t.url, t.auth, t.token_env, t.model) == ("lab", "http://192.0.2.5:8000", "bearer", "LAB_TOKEN",
                                                             "gemma")
    assert resolve_target("l4").auth == "google-id-token"
    assert [x.name for x in list_targets()] == ["local", "l4", "lab"]


def test_env_target(tmp_path, monkeypatch):
    write_config(tmp_path, '[targets.l4]\nurl = "https://x.run.app"\n')
    monkeypatch.setenv("INFERCTL_TARGET", "l4")
    assert resolve_target().name == "l4"


def test_unknown_target_lists_known_ones(tmp_path):
    write_config(tmp_path, '[targets.l4]\nurl = "https://x.run.app"\n')
    with pytest.raises(ConfigError, match="Unknown target 'h100'; known targets: l4, local"):
        resolve_target("h100")


def test_broken_config_file(tmp_path):
    write_config(tmp_path, "[targets.l4\nurl=")
    with pytest.raises(ConfigError, match="Cannot read config file"):
        resolve_target()
    write_config(tmp_path, '[targets.l4]\nurl = "https://x"\nauth = "kerberos"\n')
    with pytest.raises(ConfigError, match="invalid at 'targets.l4.auth'"):
        resolve_target()


def test_config_asks_its_sources_only_for_names_the_file_does_not_define(tmp_path):
    """config.py imports nothing above data: the local engine and profiles come in as sources (ops.targets)."""
    from inferctl import config

    write_config(tmp_path, '[targets.l4]\nurl = "https://x.run.app"\n')
    asked = []

    def source(name):
        asked.append(name)
        return config.Target(name=name, url="http://192.0.2.9:8000") if name == "dep" else None

    assert config.resolve_target("l4", sources=[source]).url == "https://x.run.app"
    assert config.resolve_target("dep", sources=[source]).url == "http://192.0.2.9:8000"
    with pytest.raises(ConfigError, match="Unknown target 'local'; known targets: l4, local"):
        config.resolve_target(sources=[source])  # without the ops sources even 'local' is unknown here
    assert asked == ["dep", "local"]
