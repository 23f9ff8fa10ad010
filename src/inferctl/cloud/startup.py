"""The boot script of a GCE or TPU VM: fetch secrets from Secret Manager, start vLLM in Docker.

The script holds secret *names*, never values: at boot it asks the metadata server for an access
token and reads the HF token and the server's API key from Secret Manager's REST API (curl +
python3, both on Deep Learning VM and TPU VM images; no gcloud needed). Values travel only in
environment variables of the container (``docker run -e NAME`` without ``=value`` copies them
from the script's environment, so they never appear on a command line). ``set +x`` keeps them
out of the startup log. Every value rendered from a profile goes through ``shlex.quote``.
"""

from __future__ import annotations

import shlex

from inferctl.profiles.profile import Profile
from inferctl.profiles.serve import serve_args

CONTAINER = "vllm"
AUTH_DIR = "/opt/inferctl"
AUTH_MODULE = "inferctl_vm_auth"


def _auth_source() -> str:
    """cloud/vm_auth.py, as written onto the VM (stdlib only; it runs inside the vLLM image)."""
    from importlib import resources

    return resources.files("inferctl.cloud").joinpath("vm_auth.py").read_text(encoding="utf-8")

# The value never passes through a bare `$(...)`: that would strip its trailing newlines, and anything
# the helper printed to stdout would become part of it. Python appends a "." after the decoded bytes,
# `${val%.}` removes exactly that, and `printf -v` stores the rest in the variable named by $1. Progress
# messages go to stderr. (A NUL byte cannot be held in a bash variable or an environment variable.)
_FETCH = r'''
fetch_secret() {  # $1 = variable to set, $2 = secret name; sets $1 to the latest version's exact bytes
  local tok val i
  for i in $(seq 1 90); do
    if tok=$(curl -sf -H 'Metadata-Flavor: Google' \
          'http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token' \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])') &&
       val=$(curl -sf -H "Authorization: Bearer ${tok}" \
          "https://secretmanager.googleapis.com/v1/projects/${PROJECT}/secrets/$2/versions/latest:access" \
          | python3 -c 'import base64,json,sys; d=json.load(sys.stdin)
sys.stdout.buffer.write(base64.b64decode(d["payload"]["data"]) + b".")'); then
      printf -v "$1" '%s' "${val%.}"
      return 0
    fi
    echo "waiting for secret $2 ($i/90)" >&2
    sleep 20
  done
  echo "could not read secret $2 after 90 tries; check that the VM's service account may access it" >&2
  return 1
}
'''


def api_key_secret(profile: Profile) -> str:
    """Name of the Secret Manager secret with the server's API key (created by inferctl)."""
    return f"inferctl-{profile.resource_id}-api-key"


def startup_script(profile: Profile) -> str:
    """The startup-script metadata value for a VM or TPU profile."""
    q = shlex.quote
    lines = [
        "#!/bin/bash",
        "# Written by inferctl. Secrets are read from Secret Manager at boot; none is stored here.",
        "set -euo pipefail",
        "set +x",
        "exec >>/var/log/inferctl-startup.log 2>&1",
        f"PROJECT={q(profile.project or '')}",
        _FETCH.strip(),
        f"fetch_secret VLLM_API_KEY {q(api_key_secret(profile))}",
        "export VLLM_API_KEY",
        # every route but /health behind the key (vLLM's --api-key guards /v1 only): see cloud/vm_auth.py
        f"mkdir -p {AUTH_DIR}",
        f"cat > {AUTH_DIR}/{AUTH_MODULE}.py <<'INFERCTL_AUTH_EOF'",
        _auth_source().rstrip("\n"),
        "INFERCTL_AUTH_EOF",
    ]
    docker = ["docker", "run", "-d", "--name", CONTAINER, "--restart", "unless-stopped", "--ipc=host",
              "-p", f"{profile.port}:{profile.port}", "-e", "VLLM_API_KEY",
              "-v", f"{AUTH_DIR}:{AUTH_DIR}:ro", "-e", f"PYTHONPATH={AUTH_DIR}"]
    if profile.model.hf_token_secret and profile.model.hf_repo:
        lines += [f"fetch_secret HF_TOKEN {q(profile.model.hf_token_secret)}", "export HF_TOKEN"]
        docker += ["-e", "HF_TOKEN"]
    if profile.platform == "tpu":
        # TPU chips are device files; vLLM TPU needs host networking and the shm for its compile cache
        docker = [d for d in docker if d not in ("-p", f"{profile.port}:{profile.port}")]
        docker += ["--privileged", "--net=host", "--shm-size", "16g"]
    else:
        docker += ["--gpus", "all"]
    if profile.model.bucket:
        lines += [
            "if ! command -v gcsfuse >/dev/null; then",
            "  apt-get update -y && apt-get install -y gcsfuse || true",
            "fi",
            f"mkdir -p {q(profile.model.mount_path)}",
            # uid/gid 1001 is the vllm user inside the official image: the files must be readable by it
            f"gcsfuse -o ro --implicit-dirs --uid 1001 --gid 1001 {q(profile.model.bucket)} "
            f"{q(profile.model.mount_path)}",
        ]
        docker += ["-v", f"{profile.model.mount_path}:{profile.model.mount_path}:ro", "-e", "HF_HUB_OFFLINE=1"]
    for name, value in sorted(profile.vllm.env.items()):
        docker += ["-e", f"{name}={value}"]
    docker += [profile.image, *_entry(profile), *serve_args(profile), "--middleware", f"{AUTH_MODULE}.RequireKey"]
    lines += [
        f"docker rm -f {CONTAINER} >/dev/null 2>&1 || true",
        " ".join(q(part) for part in docker),
    ]
    return "\n".join(lines) + "\n"


def _entry(profile: Profile) -> list[str]:
    # vllm/vllm-openai's entrypoint already is `vllm serve`; the TPU image has no entrypoint.
    return ["vllm", "serve"] if profile.platform == "tpu" else []
