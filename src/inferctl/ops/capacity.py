"""`capacity`: where an accelerator is offered and how much quota is left (read-only)."""

from __future__ import annotations

from inferctl.cloud.capacity import CapacityPlatform, CapacityReport


async def find_capacity(accelerator: str, *, regions: list[str] | None = None, project: str | None = None,
                        platforms: list[CapacityPlatform] | None = None) -> CapacityReport:
    """Offered regions/zones and quota for ``accelerator``; creates nothing."""
    from inferctl.cloud import capacity
    from inferctl.cloud.clients import CloudContext
    from inferctl.profiles.profile import resolve_project

    ctx = CloudContext(resolve_project(project))
    return await capacity.find_capacity(ctx, accelerator, regions=regions, platforms=platforms)
