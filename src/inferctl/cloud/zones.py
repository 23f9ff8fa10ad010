"""Which zones (Cloud Run: regions) a deploy tries, in order, and why.

    choices = await zone_order(ctx, profile, "auto")        # from `capacity`: offered + quota left
    choices = zone_order_given(profile, ["us-east5-b", "us-east5-a"])   # the user's order, unchecked

``auto`` reads the same APIs as ``inferctl capacity`` (nothing is created): a location is a candidate when
the accelerator is offered there and the quota left (when known) covers the profile's GPUs / chips. The
profile's own location comes first when it qualifies, then the others by quota left. Quota is not capacity:
a candidate can still be stocked out, which is why deploy moves on to the next one (ops/deploy.py).
"""

from __future__ import annotations

import re

from inferctl.cloud.clients import CloudContext
from inferctl.cloud.requests import ZoneChoice
from inferctl.errors import ConfigError
from inferctl.profiles.profile import Profile

_LOCATION = re.compile(r"^[a-z]+-[a-z]+[0-9]+(-[a-z])?$")


def needed(profile: Profile) -> int:
    """GPUs (GCE, Cloud Run) or chips (TPU: the number in v6e-4) one deployment of the profile uses."""
    if profile.platform == "tpu":
        m = re.search(r"-(\d+)$", profile.accelerator)
        return int(m.group(1)) if m else 1
    return profile.accelerator_count


def parse_zones(spec: str) -> list[str] | None:
    """``auto`` -> None (ask capacity); ``Z1,Z2`` -> the list; anything else is a ConfigError."""
    spec = spec.strip()
    if spec == "auto":
        return None
    zones = [z.strip() for z in spec.split(",") if z.strip()]
    bad = [z for z in zones if not _LOCATION.match(z)]
    if not zones or bad:
        raise ConfigError(f"--zones takes 'auto' or a comma-separated list of zones (regions for Cloud Run), like "
                          f"us-east5-b,us-east5-a; got {spec[:80]!r}.")
    if len(set(zones)) != len(zones):
        raise ConfigError("--zones lists a zone twice.")
    return zones


def zone_order_given(profile: Profile, zones: list[str]) -> list[ZoneChoice]:
    kind = "region" if profile.platform == "cloudrun" else "zone"
    for z in zones:
        is_zone = bool(re.search(r"-[a-z]$", z))
        if is_zone != (kind == "zone"):
            raise ConfigError(f"{z} is not a {kind}; a {profile.platform} profile deploys to a {kind}.")
    return [ZoneChoice(location=z, why=f"given by --zones (#{i})") for i, z in enumerate(zones, 1)]


async def zone_order(ctx: CloudContext, profile: Profile, spec: str) -> list[ZoneChoice]:
    """The locations to try, best first. Raises ConfigError when ``auto`` finds none."""
    zones = parse_zones(spec)
    if zones is not None:
        return zone_order_given(profile, zones)
    from inferctl.cloud.capacity import find_capacity

    report = await find_capacity(ctx, profile.accelerator, platforms=[profile.platform])  # type: ignore[list-item]
    want = needed(profile)
    unit = "chips" if profile.platform == "tpu" else "GPUs"
    candidates: list[ZoneChoice] = []
    skipped: list[str] = []
    for row in report.rows:
        if row.platform != profile.platform:
            continue
        if profile.platform == "gce":
            places = row.zones  # the region's zones that offer the GPU; quota is per region
        elif profile.platform == "tpu":
            places = [row.location] if profile.accelerator in row.zones else []
        else:
            places = [row.location] if row.offered else []
        if not places:
            continue
        if row.available is not None and row.available < want:
            skipped.append(f"{row.location} (quota left {row.available:g} < {want} {unit})")
            continue
        quota = (f"quota left {row.available:g} {unit} ({row.quota_metric})" if row.available is not None
                 else "quota unknown")
        for place in places:
            candidates.append(ZoneChoice(location=place, quota_available=row.available,
                                         why=f"offers {profile.accelerator}; {quota}"))
    if not candidates:
        extra = f" Skipped for quota: {', '.join(skipped)}." if skipped else ""
        raise ConfigError(f"No location offers {profile.accelerator} with quota for {want} {unit} in project "
                          f"{ctx.project}.{extra} See `inferctl capacity -a {profile.accelerator}`.")
    home = profile.location
    candidates.sort(key=lambda c: (c.location != home, -(c.quota_available or 0), c.location))
    if candidates[0].location == home:
        candidates[0].why += "; the profile's own location"
    return candidates
