"""Cloud Run GPU services: the service body for a profile, and get / wait / scale / delete.

GPU services need instance-based billing (``cpuIdle: false``), one GPU per instance and the
documented CPU/memory minimums (checked in serve.py). Services require IAM authentication unless
the profile sets ``allow_unauthenticated`` (then ``invokerIamDisabled: true`` and a warning). The
HF token reaches the container as a Secret Manager reference, never as a value.
"""

from __future__ import annotations

from typing import Any

from inferctl.cloud.clients import CloudContext, to_dict
from inferctl.cloud.errors import ResourceNotFound
from inferctl.cloud.requests import PlannedRequest, gcloud_command
from inferctl.cloud.status import Condition, DeploymentStatus, is_managed
from inferctl.profiles.profile import Profile
from inferctl.profiles.serve import serve_args

VOLUME = "weights"


def parent(profile: Profile) -> str:
    return f"projects/{profile.project}/locations/{profile.location}"


def service_name(profile: Profile) -> str:
    return f"{parent(profile)}/services/{profile.resource_id}"


def service_body(profile: Profile) -> dict[str, Any]:
    """The v2 ``Service`` JSON for a profile."""
    labels = profile.resource_labels()
    container: dict[str, Any] = {
        "name": "vllm",
        "image": profile.image,
        "args": serve_args(profile),
        "ports": [{"name": "http1", "containerPort": profile.port}],
        "resources": {
            "limits": {"cpu": str(profile.cpu), "memory": str(profile.memory), "nvidia.com/gpu": "1"},
            "cpuIdle": False,  # GPU services need instance-based billing
            "startupCpuBoost": True,
        },
        "startupProbe": _probe(profile),
    }
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in sorted(profile.vllm.env.items())]
    if profile.model.hf_repo and profile.model.hf_token_secret:
        env.append({"name": "HF_TOKEN",
                    "valueSource": {"secretKeyRef": {"secret": profile.model.hf_token_secret, "version": "latest"}}})
    if profile.model.bucket:
        env.append({"name": "HF_HUB_OFFLINE", "value": "1"})
        container["volumeMounts"] = [{"name": VOLUME, "mountPath": profile.model.mount_path}]
    if env:
        container["env"] = env
    template: dict[str, Any] = {
        "labels": labels,
        "scaling": {"minInstanceCount": profile.scaling.min_instances,
                    "maxInstanceCount": profile.scaling.max_instances},
        "timeout": "3600s",
        "maxInstanceRequestConcurrency": profile.scaling.concurrency,
        "executionEnvironment": "EXECUTION_ENVIRONMENT_GEN2",
        "nodeSelector": {"accelerator": profile.accelerator},
        "gpuZonalRedundancyDisabled": not profile.gpu_zonal_redundancy,
        "containers": [container],
    }
    if profile.service_account:
        template["serviceAccount"] = profile.service_account
    if profile.model.bucket:
        # uid/gid 1001 = the vllm user of the image; without them the mounted files are unreadable
        template["volumes"] = [{"name": VOLUME, "gcs": {"bucket": profile.model.bucket, "readOnly": True,
                                                        "mountOptions": ["uid=1001", "gid=1001", "implicit-dirs"]}}]
    body: dict[str, Any] = {"labels": labels, "ingress": "INGRESS_TRAFFIC_ALL", "template": template}
    if profile.allow_unauthenticated:
        body["invokerIamDisabled"] = True
    if profile.accelerator == "nvidia-rtx-pro-6000":
        body["launchStage"] = "BETA"  # the RTX PRO 6000 SKU is not GA everywhere (gcloud beta run deploy)
    return body


def _probe(profile: Profile) -> dict[str, Any]:
    p = profile.probe
    probe: dict[str, Any] = {"initialDelaySeconds": p.initial_delay_s, "periodSeconds": p.period_s,
                             "timeoutSeconds": p.timeout_s, "failureThreshold": p.failure_threshold}
    if p.kind == "http":
        probe["httpGet"] = {"path": "/health", "port": profile.port}
    else:
        probe["tcpSocket"] = {"port": profile.port}
    return probe


def plan_requests(profile: Profile) -> list[PlannedRequest]:
    return [PlannedRequest(api="run", method="services.create", parent=parent(profile), collection="services",
                           resource_id=profile.resource_id, id_param="serviceId", body=service_body(profile),
                           why="Create the Cloud Run service (waits for the Ready condition).")]


def gcloud(profile: Profile) -> list[str]:
    """The equivalent `gcloud run deploy` (display only; inferctl never runs gcloud)."""
    p = profile
    parts = ["run", "deploy", p.resource_id, f"--project={p.project}", f"--region={p.location}",
             f"--image={p.image}", f"--port={p.port}", f"--cpu={p.cpu}", f"--memory={p.memory}",
             "--gpu=1", f"--gpu-type={p.accelerator}", "--no-cpu-throttling", "--cpu-boost",
             "--execution-environment=gen2", "--timeout=3600",
             f"--concurrency={p.scaling.concurrency}", f"--min-instances={p.scaling.min_instances}",
             f"--max-instances={p.scaling.max_instances}",
             "--gpu-zonal-redundancy" if p.gpu_zonal_redundancy else "--no-gpu-zonal-redundancy",
             "--allow-unauthenticated" if p.allow_unauthenticated else "--no-allow-unauthenticated",
             "--labels=" + ",".join(f"{k}={v}" for k, v in sorted(p.resource_labels().items())),
             "--args=" + "^|^" + "|".join(serve_args(p))]
    probe = _probe(p)
    kind = "httpGet.path=/health,httpGet.port" if "httpGet" in probe else "tcpSocket.port"
    parts.append(f"--startup-probe={kind}={p.port},initialDelaySeconds={p.probe.initial_delay_s},"
                 f"failureThreshold={p.probe.failure_threshold},timeoutSeconds={p.probe.timeout_s},"
                 f"periodSeconds={p.probe.period_s}")
    if p.model.hf_repo and p.model.hf_token_secret:
        parts.append(f"--set-secrets=HF_TOKEN={p.model.hf_token_secret}:latest")
    if p.model.bucket:
        parts += [f"--add-volume=name={VOLUME},type=cloud-storage,bucket={p.model.bucket},readonly=true,"
                  "mount-options=uid=1001;gid=1001;implicit-dirs",
                  f"--add-volume-mount=volume={VOLUME},mount-path={p.model.mount_path}"]
    if p.service_account:
        parts.append(f"--service-account={p.service_account}")
    prefix = ["beta"] if p.accelerator == "nvidia-rtx-pro-6000" else []
    return [gcloud_command(*prefix, *parts)]


# -- live operations ----------------------------------------------------------------------------


async def get(ctx: CloudContext, profile: Profile) -> dict[str, Any] | None:
    """The service as REST JSON, or None when it does not exist."""
    client = ctx.run()
    try:
        svc = await ctx.call(client.get_service, f"get Cloud Run service {profile.resource_id}",
                             name=service_name(profile))
    except ResourceNotFound:
        return None
    return to_dict(svc)


def status(profile: Profile, svc: dict[str, Any] | None) -> DeploymentStatus:
    """Readiness: terminalCondition SUCCEEDED and not reconciling; failed: CONDITION_FAILED."""
    base = {"profile": profile.name, "platform": "cloudrun", "resource_name": service_name(profile)}
    if svc is None:
        return DeploymentStatus(**base, exists=False, phase="absent", managed=False)
    term = svc.get("terminalCondition") or {}
    state = term.get("state")
    reconciling = bool(svc.get("reconciling"))
    if state == "CONDITION_FAILED":
        phase = "failed"
    elif state == "CONDITION_SUCCEEDED" and not reconciling:
        phase = "ready"
    else:
        phase = "pending"
    template = svc.get("template") or {}
    container = (template.get("containers") or [{}])[0]
    limits = (container.get("resources") or {}).get("limits") or {}
    scaling = template.get("scaling") or {}
    accel = (template.get("nodeSelector") or {}).get("accelerator")
    conditions = [Condition(type=c.get("type", ""), state=c.get("state", ""), message=c.get("message"))
                  for c in [term, *(svc.get("conditions") or [])] if c]
    reason = term.get("message") if phase != "ready" else None
    if phase == "pending" and not reason:
        reason = "reconciling" if reconciling else (state or "waiting for the first revision")
    return DeploymentStatus(
        **base, exists=True, phase=phase, state="Ready" if phase == "ready" else state, reason=reason,
        conditions=conditions, revision=(svc.get("latestReadyRevision") or "").rsplit("/", 1)[-1] or None,
        url=svc.get("uri") or None, image=container.get("image") or None,
        accelerator=f"{limits.get('nvidia.com/gpu', '1')}x {accel}" if accel else None,
        min_instances=int(scaling.get("minInstanceCount", 0)),
        max_instances=int(scaling["maxInstanceCount"]) if "maxInstanceCount" in scaling else None,
        labels=svc.get("labels") or {}, managed=is_managed(svc.get("labels")),
        authenticated=not svc.get("invokerIamDisabled", False))


async def delete(ctx: CloudContext, profile: Profile) -> None:
    client = ctx.run()
    await ctx.call(client.delete_service, f"delete Cloud Run service {profile.resource_id}",
                   name=service_name(profile))


async def scale(ctx: CloudContext, profile: Profile, *, min_instances: int | None,
                max_instances: int | None) -> None:
    """Change min/max instances of the live service (a new revision with the same template)."""
    from google.cloud import run_v2

    client = ctx.run()
    svc = await ctx.call(client.get_service, f"get Cloud Run service {profile.resource_id}",
                         name=service_name(profile))
    if min_instances is not None:
        svc.template.scaling.min_instance_count = min_instances
    if max_instances is not None:
        svc.template.scaling.max_instance_count = max_instances
    await ctx.call(client.update_service, f"update Cloud Run service {profile.resource_id}",
                   request=run_v2.UpdateServiceRequest(service=svc))
