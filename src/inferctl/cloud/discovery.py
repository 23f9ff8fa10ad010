"""A deployed profile as a target: no URL pasted by hand.

- Cloud Run: the service's ``uri``, authenticated with a Google ID token for that audience.
- GCE / TPU: ``http://EXTERNAL_IP:PORT`` (or the internal address when there is no external one),
  authenticated with the server's API key read from Secret Manager. The key is held only in this
  process's environment under a private variable name so the existing bearer-token path can use
  it; it is never printed, logged or written anywhere.

Discovery runs on every resolution (one or two API calls): a redeploy with a new URL or IP is
picked up at once, unlike the seed's module-level cache.
"""

from __future__ import annotations

import os
import re

from inferctl.cloud.clients import CloudContext
from inferctl.cloud.errors import CloudError
from inferctl.errors import ConfigError
from inferctl.profiles.profile import load_profile


def _run(runner, fn):
    """Run ``runner(fn)``; from inside an event loop (the MCP face) do it on a helper thread."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return runner(fn)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(runner, fn).result()


def key_env_name(profile_name: str) -> str:
    return "INFERCTL_PROFILE_KEY_" + re.sub(r"[^A-Z0-9]", "_", profile_name.upper())


def profile_target(name: str, *, ctx: CloudContext | None = None):  # -> inferctl.config.Target
    """Resolve a deployment profile to a Target (blocking; call it in a thread from async code)."""
    import anyio

    from inferctl.cloud import deploy

    profile = load_profile(name).with_project()
    ctx = ctx or CloudContext(profile.project or "")

    async def discover():
        return await endpoint_target(ctx, profile, await deploy.describe(ctx, profile))

    try:
        return _run(anyio.run, discover)
    except CloudError as exc:
        raise ConfigError(f"Cannot find the endpoint of profile '{name}': {exc}") from None


async def endpoint_target(ctx: CloudContext, profile, st):  # -> inferctl.config.Target
    """The Target of a described deployment: its URL, how to authenticate, and the image it runs."""
    from inferctl.cloud import secrets
    from inferctl.cloud.startup import api_key_secret
    from inferctl.config import Target

    name = profile.name
    if not st.exists:
        raise ConfigError(f"Profile '{name}' is not deployed; run `inferctl deploy {name} --apply` first.")
    url = st.url or st.internal_url
    if st.phase != "ready" or not url:
        raise ConfigError(f"Profile '{name}' is {st.state or st.phase}" + (f" ({st.reason})" if st.reason else "")
                          + f"; wait for it (`inferctl describe {name}`).")
    model, image = profile.vllm.served_model_name, st.image
    if profile.platform == "cloudrun":
        if profile.allow_unauthenticated:
            return Target(name=name, url=url, auth="none", model=model, image=image)
        return Target(name=name, url=url, auth="google-id-token", audience=url, model=model, image=image)
    key = await secrets.read_secret(ctx, api_key_secret(profile))
    env = key_env_name(name)
    os.environ[env] = key or ""
    return Target(name=name, url=url, auth="bearer", token_env=env, model=model, image=image)
