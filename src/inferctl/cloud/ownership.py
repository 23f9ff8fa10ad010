"""What a deployment owns, and how destroy / scale know a resource is this profile's own.

A main resource (Cloud Run service, GCE VM, TPU queued resource) is ours when it carries both
``managed-by=inferctl`` and ``inferctl-profile=<this profile>``: another profile's resource, or one created
by hand, is refused unless forced.

A VM or TPU deploy also creates resources beside it: the vLLM API-key secret and, when the profile lists
source ranges, a firewall rule. Deploy records their names in the main resource's metadata (key
``inferctl-created``, full resource names separated by spaces), so destroy deletes exactly what that deploy
created, whatever the profile says today, and nothing else. Each recorded resource is checked again before
it is deleted: the secret by its labels, the firewall rule by the marker in its description.
"""

from __future__ import annotations

from typing import Any

from inferctl.profiles.profile import MANAGED_LABEL, MANAGED_VALUE, PROFILE_LABEL, Profile, label_value

CREATED_KEY = "inferctl-created"


def owner_labels(profile: Profile) -> dict[str, str]:
    """The labels that say a resource is this profile's (a subset of ``profile.resource_labels()``)."""
    return {MANAGED_LABEL: MANAGED_VALUE, PROFILE_LABEL: label_value(profile.name)}


def owned_by(labels: dict[str, str] | None, profile: Profile) -> bool:
    labels = labels or {}
    return all(labels.get(k) == v for k, v in owner_labels(profile).items())


def why_not_owned(labels: dict[str, str] | None, profile: Profile) -> str | None:
    """None when the labels say this profile's; else why not, in a few words."""
    labels = labels or {}
    if labels.get(MANAGED_LABEL) != MANAGED_VALUE:
        return f"it was not created by inferctl (no {MANAGED_LABEL}={MANAGED_VALUE} label)"
    mine = label_value(profile.name)
    theirs = labels.get(PROFILE_LABEL)
    if theirs != mine:
        return (f"it belongs to profile '{theirs}', not '{profile.name}'" if theirs
                else f"it has no {PROFILE_LABEL} label, so it is not known to be profile '{profile.name}''s")
    return None


def firewall_name(profile: Profile) -> str:
    """The firewall rule a VM deploy of ``profile`` creates (GCE names are at most 63 characters)."""
    return f"inferctl-{profile.resource_id}-{profile.port}"[:63]


def firewall_marker(profile: Profile) -> str:
    """Firewall rules carry no labels; their description says whose they are."""
    return f"{MANAGED_LABEL}={MANAGED_VALUE} {PROFILE_LABEL}={label_value(profile.name)}"


def created_with(profile: Profile) -> list[str]:
    """Full names of what a VM / TPU deploy of ``profile`` creates beside the main resource."""
    if profile.platform == "cloudrun":
        return []
    from inferctl.cloud.startup import api_key_secret

    out = [f"projects/{profile.project}/secrets/{api_key_secret(profile)}"]
    if profile.allowed_source_ranges:
        out.append(f"projects/{profile.project}/global/firewalls/{firewall_name(profile)}")
    return out


def record(profile: Profile) -> str:
    """The metadata value deploy writes on the VM / TPU node (no commas: gcloud --metadata splits on them)."""
    return " ".join(created_with(profile))


def recorded(value: Any) -> list[str]:
    """The resource names a metadata value lists (nothing when absent: then nothing else is deleted)."""
    return value.split() if isinstance(value, str) else []
