"""The VM boot script hands the container each secret byte for byte, however often the first reads fail.

The rendered startup script runs under a real bash with stub ``curl`` (fails N times, then serves the
metadata token and Secret Manager's JSON), ``sleep`` (instant) and ``docker`` (records the environment
the container would get) first on PATH; python3 is the real one, as on the VM images.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inferctl.cloud.startup import startup_script
from inferctl.profiles.profile import ModelSource, load_profile

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

SECRETS = {
    "plain": b"sk-abc123",
    "trailing newlines": b"hf_tok\n\n",
    "special characters": b" lead'ing \"quote\" $HOME `id` \\ \t%s * [x] -n\r\n\xe2\x9c\x93 end ",
    "looks like an option": b"-e",
    "not utf-8": b"\xff\xfe raw bytes \x80",
}

_CURL = r"""#!/bin/sh
n=$(cat "$STUB_DIR/curl-calls" 2>/dev/null || echo 0)
echo $((n + 1)) > "$STUB_DIR/curl-calls"
[ "$n" -lt "$STUB_FAILS" ] && exit 22  # what curl -f does on an HTTP error
for last; do :; done
exec {python} "$STUB_DIR/serve.py" "$last"
"""

_SERVE = r"""
import base64, json, os, sys
from pathlib import Path
url = sys.argv[1]
if "metadata.google.internal" in url:
    print(json.dumps({{"access_token": "ya29.tok"}}))
else:
    name = url.rsplit("/secrets/", 1)[1].split("/")[0]
    data = (Path(os.environ["STUB_DIR"]) / ("secret-" + name)).read_bytes()
    print(json.dumps({{"payload": {{"data": base64.b64encode(data).decode()}}}}))
"""

_DOCKER = r'''#!{python}
import os
from pathlib import Path
out = Path(os.environ["STUB_DIR"])
for name in ("VLLM_API_KEY", "HF_TOKEN"):
    if name in os.environ:
        (out / ("env-" + name)).write_bytes(os.environb[name.encode()])
'''


def _profile():
    base = load_profile("gce-g2-48-31b").model_copy(update={"project": "test-proj"})
    model = ModelSource(hf_repo="google/gemma-4-31B-it", hf_token_secret="hf-token")
    return base.model_copy(update={"model": model})


def _run(tmp_path: Path, secret: bytes, fails: int) -> subprocess.CompletedProcess:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, text in (("curl", _CURL), ("docker", _DOCKER), ("sleep", "#!/bin/sh\nexit 0\n")):
        path = stubs / name
        path.write_text(text.format(python=sys.executable))
        path.chmod(0o755)
    (stubs / "python3").symlink_to(sys.executable)
    (tmp_path / "serve.py").write_text(_SERVE.format())
    profile = _profile()
    from inferctl.cloud.startup import api_key_secret

    (tmp_path / f"secret-{api_key_secret(profile)}").write_bytes(secret)
    (tmp_path / "secret-hf-token").write_bytes(secret)
    script = startup_script(profile)
    log = tmp_path / "startup.log"
    assert "exec >>/var/log/inferctl-startup.log 2>&1" in script
    script = script.replace("/var/log/inferctl-startup.log", str(log))
    env = {"PATH": f"{stubs}:{os.environ['PATH']}", "STUB_DIR": str(tmp_path), "STUB_FAILS": str(fails)}
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("fails", [0, 1, 2])
@pytest.mark.parametrize("label", list(SECRETS))
def test_boot_script_passes_each_secret_byte_for_byte(tmp_path, label, fails):
    secret = SECRETS[label]
    done = _run(tmp_path, secret, fails)
    log = (tmp_path / "startup.log").read_text(errors="replace")
    assert done.returncode == 0, log
    assert (tmp_path / "env-VLLM_API_KEY").read_bytes() == secret
    assert (tmp_path / "env-HF_TOKEN").read_bytes() == secret
    if fails:  # the progress message went to the log (stderr), not into the value
        assert "waiting for secret" in log


def test_boot_script_gives_up_with_a_message_when_the_secret_never_comes(tmp_path):
    done = _run(tmp_path, b"never read", 10_000)
    log = (tmp_path / "startup.log").read_text()
    assert done.returncode != 0
    assert not (tmp_path / "env-VLLM_API_KEY").exists()  # docker never ran
    assert "waiting for secret" in log and "could not read secret" in log

