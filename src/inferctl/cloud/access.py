"""How a VM / TPU server is reached: through a tunnel (the default: no external IP) or an external IP.

Either way every route but ``GET /health`` needs the server's API key (vm_auth.py, set up by the startup
script), so ``/metrics``, ``/tokenize`` and ``/invocations`` are not open doors. ``network_access`` in
the profile chooses; ``describe`` and the deploy plan say which, with the tunnel command when it applies.
"""

from __future__ import annotations

from inferctl.cloud.profiles import Profile

IAP_RANGE = "35.235.240.0/20"  # where Identity-Aware Proxy TCP forwarding connects from


def external_ip(profile: Profile) -> bool:
    return profile.platform != "cloudrun" and profile.network_access == "external"


def access_hint(profile: Profile) -> str | None:
    """One sentence saying how to reach a VM / TPU server (None for Cloud Run)."""
    if profile.platform == "cloudrun":
        return None
    port = profile.port
    if external_ip(profile):
        ranges = ", ".join(profile.allowed_source_ranges) or "nobody outside the VPC (no allowed_source_ranges)"
        return (f"network_access = external: an external IP, reachable on port {port} from {ranges}; every route "
                "but /health needs the API key.")
    if profile.platform == "tpu":
        tunnel = (f"gcloud compute tpus tpu-vm ssh {profile.resource_id}-node --zone {profile.location} "
                  f"--tunnel-through-iap -- -N -L {port}:localhost:{port}")
    else:
        tunnel = (f"gcloud compute start-iap-tunnel {profile.resource_id} {port} --local-host-port=localhost:{port} "
                  f"--zone {profile.location}")
    return (f"network_access = tunnel: no external IP; reach the server through IAP with `{tunnel}` (a firewall "
            f"rule must let {IAP_RANGE} reach port {'22' if profile.platform == 'tpu' else port}), then use "
            f"http://localhost:{port} with the API key; every route but /health needs it.")
