"""A fake of the Google Cloud REST APIs inferctl uses, on 127.0.0.1.

The official clients (REST transport, anonymous credentials) talk to it unchanged:

    with FakeGCP() as gcp:
        monkeypatch.setenv("INFERCTL_GCP_ENDPOINT", gcp.url)

It answers with the shapes of ../shared/reference/gcp.md: long-running operations, Cloud Run
services that reconcile for a few polls before turning Ready, queued resources walking
CREATING -> ACCEPTED -> WAITING_FOR_RESOURCES -> PROVISIONING -> ACTIVE, VMs PROVISIONING ->
STAGING -> RUNNING. Failures are injected per method key (``gcp.state.fail["run.services.create"] =
api_not_enabled("run.googleapis.com")``) and every request is recorded (``gcp.state.requests``) so
tests can compare what was sent with what the dry run printed, and search it for secrets.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.fake_vllm import ServerThread

PROJECT_NUMBER = "123456789012"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    raw: str
    key: str


@dataclass
class Failure:
    code: int
    status: str
    message: str
    reason: str | None = None
    times: int = 1_000_000
    metadata: dict = field(default_factory=dict)  # how many requests fail before it succeeds (transient errors)


def api_not_enabled(service: str) -> Failure:
    return Failure(403, "PERMISSION_DENIED", f"{service} API has not been used in project 123456789012 before or "
                   "it is disabled. Enable it by visiting the console then retry.", "SERVICE_DISABLED",
                   metadata={"service": service})


def permission_denied(perm: str = "run.services.create") -> Failure:
    return Failure(403, "PERMISSION_DENIED", f"Permission '{perm}' denied on resource (or it may not exist).",
                   "IAM_PERMISSION_DENIED")


def quota_exceeded() -> Failure:
    return Failure(429, "RESOURCE_EXHAUSTED", "metadata.annotations[run.googleapis.com/maxScale]: You do not have "
                   "quota for using GPUs without zonal redundancy.", "QUOTA_EXCEEDED")


# Capacity refusals as Google sends them (docs/cloud.md, "When a zone says no", lists each with its source).
def gce_stockout_503(project: str, zone: str) -> Failure:
    """instances.insert refused at once: 503 ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS (scylladb/scylla-cluster-tests
    #12477, kubernetes/k8s.io#9834: reason resource_availability, domain compute.googleapis.com)."""
    return Failure(503, "UNAVAILABLE", f"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: The zone 'projects/{project}/zones/"
                   f"{zone}' does not have enough resources available to fulfill the request.  '(resource type:"
                   "compute)'.", "resource_availability", metadata={"zone": zone})


def gce_stockout_op(project: str, zone: str) -> dict:
    """The insert operation finishes with this error (googlefonts/fontbakery-dashboard#81,
    GoogleCloudPlatform/DataflowTemplates#2263)."""
    return {"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": f"The zone 'projects/{project}/zones/{zone}' does not "
            "have enough resources available to fulfill the request.  Try a different zone, or try again later."}


def gce_quota_op(region: str, metric: str = "NVIDIA_L4_GPUS") -> dict:
    """The insert operation's quota error ("Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.", fastai/course-v3
    #165; the per-region form names the region)."""
    return {"code": "QUOTA_EXCEEDED", "message": f"Quota '{metric}' exceeded.  Limit: 0.0 in region {region}."}


def tpu_no_capacity(zone: str) -> str:
    """A queued resource's FAILED error, code 8 (GoogleCloudPlatform/magic-modules#7297)."""
    return (f'There is no more capacity in the zone "{zone}"; you can try in another zone where Cloud TPU Nodes are '
            "offered (see https://cloud.google.com/tpu/docs/regions)")


def already_exists() -> Failure:
    return Failure(409, "ALREADY_EXISTS", "Resource already exists.")


def unavailable(times: int = 1) -> Failure:
    return Failure(503, "UNAVAILABLE", "The service is currently unavailable.", times=times)


@dataclass
class GcpState:
    project: str = "test-proj"
    requests: list[Recorded] = field(default_factory=list)
    fail: dict[str, Failure] = field(default_factory=dict)
    services: dict[str, dict] = field(default_factory=dict)
    service_polls: dict[str, int] = field(default_factory=dict)
    service_ready_after: int = 2
    service_failure: str | None = None  # terminalCondition message when the revision fails
    instances: dict[str, dict] = field(default_factory=dict)
    instance_polls: dict[str, int] = field(default_factory=dict)
    firewalls: dict[str, dict] = field(default_factory=dict)
    queued: dict[str, dict] = field(default_factory=dict)
    queued_polls: dict[str, int] = field(default_factory=dict)
    qr_progression: list[str] = field(default_factory=lambda: [
        "CREATING", "ACCEPTED", "WAITING_FOR_RESOURCES", "PROVISIONING", "ACTIVE"])
    qr_failure: str | None = None  # FAILED with this message instead of ACTIVE
    nodes: dict[str, dict] = field(default_factory=dict)
    secrets: dict[str, dict] = field(default_factory=dict)
    log_entries: list[dict] = field(default_factory=list)
    quota_infos: dict[str, list[dict]] = field(default_factory=dict)
    region_quotas: dict[str, list[dict]] = field(default_factory=dict)
    gpu_zones: dict[str, list[str]] = field(default_factory=dict)  # zone -> compute accelerator types
    tpu_zones: dict[str, list[str]] = field(default_factory=dict)  # zone -> TPU accelerator types
    blobs: dict[str, list[dict]] = field(default_factory=dict)
    blob_data: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (bucket, object) -> uploaded bytes
    uploads: dict[str, dict] = field(default_factory=dict)  # resumable upload sessions
    # capacity per location: zone -> Failure (insert refused at once) or {"code", "message"} (operation error)
    vm_zone_refusal: dict[str, Any] = field(default_factory=dict)
    qr_zone_failure: dict[str, str] = field(default_factory=dict)  # zone -> FAILED message instead of ACTIVE
    qr_zone_hold: set[str] = field(default_factory=set)  # zones whose queue never moves past WAITING_FOR_RESOURCES
    run_region_refusal: dict[str, Failure] = field(default_factory=dict)  # region -> services.create refused
    operations: dict[str, dict] = field(default_factory=dict)  # Compute operations that finished with an error
    tpu_stop_refusal: Failure | None = None  # nodes.stop / start answered with this error
    jobs: dict[str, dict] = field(default_factory=dict)
    executions: dict[str, dict] = field(default_factory=dict)
    job_runner: Any = None  # callable(job, env) run by jobs.run; an exception fails the execution
    counter: itertools.count = field(default_factory=lambda: itertools.count(1))
    now: str = "2026-11-20T10:00:00.000-08:00"  # creation / start times the fake stamps (Compute's RFC 3339 form)

    def sent(self, key: str) -> list[Recorded]:
        return [r for r in self.requests if r.key == key]

    def secret_value(self, secret_id: str) -> bytes | None:
        s = self.secrets.get(f"projects/{self.project}/secrets/{secret_id}")
        return s["versions"][-1] if s and s["versions"] else None


def _error(f: Failure) -> JSONResponse:
    details = []
    if f.reason:
        details.append({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": f.reason,
                        "domain": "googleapis.com", "metadata": f.metadata})
    return JSONResponse({"error": {"code": f.code, "message": f.message, "status": f.status, "details": details,
                                   "errors": [{"message": f.message, "reason": f.reason or f.status}]}},
                        status_code=f.code)


def _not_found(what: str) -> JSONResponse:
    return _error(Failure(404, "NOT_FOUND", f"Resource '{what}' was not found"))


class _App:
    def __init__(self, state: GcpState) -> None:
        self.s = state
        self.routes: list[tuple[str, re.Pattern[str], str, Any]] = []
        r = self.route
        p = r"projects/(?P<p>[^/]+)"
        # Cloud Run v2
        r("POST", rf"/v2/{p}/locations/(?P<l>[^/]+)/services", "run.services.create", self.run_create)
        r("GET", rf"/v2/{p}/locations/(?P<l>[^/]+)/services/(?P<id>[^/:]+)", "run.services.get", self.run_get)
        r("PATCH", rf"/v2/{p}/locations/(?P<l>[^/]+)/services/(?P<id>[^/:]+)", "run.services.patch", self.run_patch)
        r("GET", rf"/v2/{p}/locations/(?P<l>[^/]+)/services", "run.services.list", self.run_list)
        r("POST", rf"/v2/{p}/locations/(?P<l>[^/]+)/jobs", "run.jobs.create", self.job_create)
        r("GET", rf"/v2/{p}/locations/(?P<l>[^/]+)/jobs/(?P<id>[^/:]+)", "run.jobs.get", self.job_get)
        r("POST", rf"/v2/{p}/locations/(?P<l>[^/]+)/jobs/(?P<id>[^/:]+):run", "run.jobs.run", self.job_run)
        r("GET", rf"/v2/{p}/locations/(?P<l>[^/]+)/jobs/(?P<id>[^/:]+)/executions/(?P<e>[^/:]+)",
          "run.executions.get", self.execution_get)
        r("DELETE", rf"/v2/{p}/locations/(?P<l>[^/]+)/services/(?P<id>[^/:]+)", "run.services.delete",
          self.run_delete)
        # Cloud TPU v2
        r("GET", rf"/v2/{p}/locations", "tpu.locations.list", self.tpu_locations)
        r("POST", rf"/v2/{p}/locations/(?P<z>[^/]+)/queuedResources", "tpu.queuedResources.create", self.qr_create)
        r("GET", rf"/v2/{p}/locations/(?P<z>[^/]+)/queuedResources/(?P<id>[^/:]+)", "tpu.queuedResources.get",
          self.qr_get)
        r("DELETE", rf"/v2/{p}/locations/(?P<z>[^/]+)/queuedResources/(?P<id>[^/:]+)", "tpu.queuedResources.delete",
          self.qr_delete)
        r("GET", rf"/v2/{p}/locations/(?P<z>[^/]+)/nodes/(?P<id>[^/:]+)", "tpu.nodes.get", self.node_get)
        r("GET", rf"/v2/{p}/locations/(?P<z>[^/]+)/queuedResources", "tpu.queuedResources.list", self.qr_list)
        r("GET", rf"/v2/{p}/locations/(?P<z>[^/]+)/nodes", "tpu.nodes.list", self.node_list)
        r("POST", rf"/v2/{p}/locations/(?P<z>[^/]+)/nodes/(?P<id>[^/:]+):(?P<verb>stop|start)", "tpu.nodes.action",
          self.node_action)
        r("GET", rf"/v2/{p}/locations/(?P<z>[^/]+)/acceleratorTypes", "tpu.acceleratorTypes.list", self.tpu_types)
        r("GET", rf"/v2/{p}/locations/(?P<l>[^/]+)/operations/(?P<op>[^/]+)", "operations.get", self.lro_get)
        # Compute v1
        c = rf"/compute/v1/{p}"
        r("POST", rf"{c}/zones/(?P<z>[^/]+)/instances", "compute.instances.insert", self.vm_insert)
        r("GET", rf"{c}/zones/(?P<z>[^/]+)/instances/(?P<id>[^/]+)", "compute.instances.get", self.vm_get)
        r("DELETE", rf"{c}/zones/(?P<z>[^/]+)/instances/(?P<id>[^/]+)", "compute.instances.delete", self.vm_delete)
        r("POST", rf"{c}/zones/(?P<z>[^/]+)/instances/(?P<id>[^/]+)/(?P<verb>stop|start|setMachineType)",
          "compute.instances.action", self.vm_action)
        r("GET", rf"{c}/zones/(?P<z>[^/]+)/operations/(?P<op>[^/]+)", "compute.zoneOperations.get", self.cop_get)
        r("POST", rf"{c}/zones/(?P<z>[^/]+)/operations/(?P<op>[^/]+)/wait", "compute.zoneOperations.wait",
          self.cop_get)
        r("GET", rf"{c}/global/operations/(?P<op>[^/]+)", "compute.globalOperations.get", self.cop_get)
        r("POST", rf"{c}/global/operations/(?P<op>[^/]+)/wait", "compute.globalOperations.wait", self.cop_get)
        r("POST", rf"{c}/global/firewalls", "compute.firewalls.insert", self.fw_insert)
        r("DELETE", rf"{c}/global/firewalls/(?P<id>[^/]+)", "compute.firewalls.delete", self.fw_delete)
        r("GET", rf"{c}/global/firewalls/(?P<id>[^/]+)", "compute.firewalls.get", self.fw_get)
        r("GET", rf"{c}/regions/(?P<r>[^/]+)", "compute.regions.get", self.region_get)
        r("GET", rf"{c}/regions", "compute.regions.list", self.region_list)
        r("GET", rf"{c}/aggregated/instances", "compute.instances.aggregatedList", self.vm_aggregated)
        r("GET", rf"{c}/aggregated/acceleratorTypes", "compute.acceleratorTypes.aggregatedList", self.gpu_types)
        # Secret Manager v1
        r("POST", rf"/v1/{p}/secrets", "secretmanager.secrets.create", self.secret_create)
        r("POST", rf"/v1/{p}/secrets/(?P<id>[^/:]+):addVersion", "secretmanager.secrets.addVersion",
          self.secret_add)
        r("GET", rf"/v1/{p}/secrets/(?P<id>[^/:]+)/versions/(?P<v>[^/:]+):access",
          "secretmanager.versions.access", self.secret_access)
        r("GET", rf"/v1/{p}/secrets/(?P<id>[^/:]+)", "secretmanager.secrets.get", self.secret_get)
        r("DELETE", rf"/v1/{p}/secrets/(?P<id>[^/:]+)", "secretmanager.secrets.delete", self.secret_delete)
        # Cloud Quotas v1, Logging v2, Storage v1
        r("GET", rf"/v1/{p}/locations/global/services/(?P<svc>[^/]+)/quotaInfos", "cloudquotas.quotaInfos.list",
          self.quota_list)
        r("POST", r"/v2/entries:list", "logging.entries.list", self.log_list)
        r("GET", r"/storage/v1/b/(?P<b>[^/]+)/o", "storage.objects.list", self.blob_list)
        r("GET", r"/storage/v1/b/(?P<b>[^/]+)/o/(?P<o>.+)", "storage.objects.get", self.blob_get)
        r("GET", r"/download/storage/v1/b/(?P<b>[^/]+)/o/(?P<o>.+)", "storage.objects.download", self.blob_media)
        r("POST", r"/upload/storage/v1/b/(?P<b>[^/]+)/o", "storage.objects.insert", self.blob_upload)
        r("PUT", r"/upload/storage/v1/b/(?P<b>[^/]+)/o", "storage.objects.upload", self.blob_chunk)

    def route(self, method: str, pattern: str, key: str, fn: Any) -> None:
        self.routes.append((method, re.compile(pattern + "$"), key, fn))

    async def __call__(self, request: Request) -> JSONResponse:
        data = await request.body()
        self._bytes, self._headers, self._base = data, request.headers, str(request.base_url).rstrip("/")
        raw = data.decode(errors="replace")
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        path = request.url.path
        query = {k: v[-1] for k, v in parse_qs(request.url.query).items()}
        for method, pattern, key, fn in self.routes:
            m = pattern.match(path)
            if m and method == request.method:
                self.s.requests.append(Recorded(request.method, path, query, body, raw, key))
                fail = self.s.fail.get(key)
                if fail is not None and fail.times > 0:
                    fail.times -= 1
                    return _error(fail)
                out = fn(m.groupdict(), query, body)
                return out if isinstance(out, Response) else JSONResponse(out)
        self.s.requests.append(Recorded(request.method, path, query, body, raw, "unknown"))
        return _not_found(path)

    # -- helpers -------------------------------------------------------------------------------
    def _lro(self, parent: str, target: str, verb: str) -> dict:
        n = next(self.s.counter)
        op = {"name": f"{parent}/operations/operation-{n}", "done": False}
        if "/queuedResources/" in target:  # Cloud Run's metadata is the Service; TPU's is OperationMetadata
            op["metadata"] = {"@type": "type.googleapis.com/google.cloud.tpu.v2.OperationMetadata",
                              "target": target, "verb": verb, "apiVersion": "v2"}
        return op

    def _cop(self, scope: str, target: str, kind: str) -> dict:
        n = next(self.s.counter)
        return {"kind": "compute#operation", "id": str(n), "name": f"operation-{n}", "operationType": kind,
                "status": "RUNNING", "targetLink": target, "selfLink": f"{scope}/operations/operation-{n}",
                "zone": scope if "/zones/" in scope else None, "progress": 0}

    # -- Cloud Run -----------------------------------------------------------------------------
    def run_create(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['l']}/services/{q['serviceId']}"
        if name in self.s.services:
            return _error(already_exists())
        if g["l"] in self.s.run_region_refusal:
            return _error(self.s.run_region_refusal[g["l"]])
        svc = dict(body or {})
        svc.update(name=name, uid="7a4f-fake", generation="1", creator="me@example.com", reconciling=True,
                   terminalCondition={"type": "Ready", "state": "CONDITION_RECONCILING"},
                   uri=f"https://{q['serviceId']}-{PROJECT_NUMBER}.{g['l']}.run.app", observedGeneration="1",
                   createTime="2026-11-20T10:00:00.000000Z", etag='"CKjX"')
        self.s.services[name] = svc
        self.s.service_polls[name] = 0
        return self._lro(f"projects/{g['p']}/locations/{g['l']}", name, "create")

    def run_get(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['l']}/services/{g['id']}"
        svc = self.s.services.get(name)
        if svc is None:
            return _not_found(name)
        self.s.service_polls[name] += 1
        if svc.get("reconciling") and self.s.service_polls[name] >= self.s.service_ready_after:
            rev = f"{name}/revisions/{g['id']}-0000{svc['generation']}-abc"
            if self.s.service_failure:
                svc.update(reconciling=False, terminalCondition={
                    "type": "Ready", "state": "CONDITION_FAILED", "message": self.s.service_failure,
                    "reason": "REVISION_FAILED", "severity": "ERROR"}, latestCreatedRevision=rev)
            else:
                svc.update(reconciling=False, latestReadyRevision=rev, latestCreatedRevision=rev,
                           terminalCondition={"type": "Ready", "state": "CONDITION_SUCCEEDED"},
                           conditions=[{"type": "RoutesReady", "state": "CONDITION_SUCCEEDED"},
                                       {"type": "ConfigurationsReady", "state": "CONDITION_SUCCEEDED"}],
                           trafficStatuses=[{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}])
        return svc

    def run_patch(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['l']}/services/{g['id']}"
        svc = self.s.services.get(name)
        if svc is None:
            return _not_found(name)
        svc["template"] = (body or {}).get("template", svc.get("template"))
        svc["generation"] = str(int(svc["generation"]) + 1)
        return self._lro(f"projects/{g['p']}/locations/{g['l']}", name, "update")

    def run_list(self, g, q, body):
        prefix = f"projects/{g['p']}/locations/{g['l']}/services/"
        return {"services": [svc for name, svc in self.s.services.items() if name.startswith(prefix)]}

    # Cloud Run Jobs: an execution runs ``state.job_runner(job, env)`` in a thread (env with secret references
    # resolved from the fake Secret Manager, as Cloud Run does server-side); it fails when the runner raises.
    def job_create(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['l']}/jobs/{q['jobId']}"
        if name in self.s.jobs:
            return _error(already_exists())
        self.s.jobs[name] = {**(body or {}), "name": name, "createTime": "2026-11-20T10:00:00Z", "generation": "1"}
        return self._lro(f"projects/{g['p']}/locations/{g['l']}", name, "create")

    def job_get(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['l']}/jobs/{g['id']}"
        return self.s.jobs.get(name) or _not_found(name)

    def _env(self, job: dict) -> dict[str, str]:
        env = {}
        for var in job["template"]["template"]["containers"][0].get("env", []):
            ref = (var.get("valueSource") or {}).get("secretKeyRef")
            if ref:
                value = self.s.secret_value(ref["secret"])
                if value is None:
                    raise RuntimeError(f"secret {ref['secret']} not found")
                env[var["name"]] = value.decode()
            else:
                env[var["name"]] = var.get("value", "")
        return env

    def job_run(self, g, q, body):
        import threading

        name = f"projects/{g['p']}/locations/{g['l']}/jobs/{g['id']}"
        job = self.s.jobs.get(name)
        if job is None:
            return _not_found(name)
        ex_name = f"{name}/executions/{g['id']}-{next(self.s.counter):05d}"
        execution = {"name": ex_name, "job": g["id"], "taskCount": 1, "runningCount": 1,
                     "createTime": "2026-11-20T10:00:00Z"}
        self.s.executions[ex_name] = execution

        def work() -> None:
            try:
                if self.s.job_runner is not None:
                    self.s.job_runner(job, self._env(job))
                execution.update(runningCount=0, succeededCount=1, completionTime="2026-11-20T10:05:00Z")
            except Exception as exc:
                execution.update(runningCount=0, failedCount=1, completionTime="2026-11-20T10:05:00Z",
                                 conditions=[{"type": "Completed", "state": "CONDITION_FAILED",
                                              "message": f"Task {g['id']}-0 failed: {type(exc).__name__}"}])

        threading.Thread(target=work, daemon=True).start()
        op = self._lro(f"projects/{g['p']}/locations/{g['l']}", name, "run")
        op["metadata"] = {"@type": "type.googleapis.com/google.cloud.run.v2.Execution", "name": ex_name}
        return op

    def execution_get(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['l']}/jobs/{g['id']}/executions/{g['e']}"
        return self.s.executions.get(name) or _not_found(name)

    def run_delete(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['l']}/services/{g['id']}"
        if self.s.services.pop(name, None) is None:
            return _not_found(name)
        return self._lro(f"projects/{g['p']}/locations/{g['l']}", name, "delete")

    def lro_get(self, g, q, body):
        return {"name": f"projects/{g['p']}/locations/{g['l']}/operations/{g['op']}", "done": True}

    # -- TPU -----------------------------------------------------------------------------------
    def tpu_locations(self, g, q, body):
        return {"locations": [{"name": f"projects/{g['p']}/locations/{z}", "locationId": z}
                              for z in sorted(self.s.tpu_zones)]}

    def tpu_types(self, g, q, body):
        types = self.s.tpu_zones.get(g["z"])
        if types is None:
            return _not_found(g["z"])
        return {"acceleratorTypes": [{"name": f"projects/{g['p']}/locations/{g['z']}/acceleratorTypes/{t}",
                                      "type": t} for t in types]}

    def qr_create(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['z']}/queuedResources/{q['queuedResourceId']}"
        if name in self.s.queued:
            return _error(already_exists())
        qr = dict(body or {})
        qr.update(name=name, createTime="2026-11-20T10:00:00Z", state={"state": "CREATING", "stateInitiator": "USER"})
        self.s.queued[name] = qr
        self.s.queued_polls[name] = 0
        return self._lro(f"projects/{g['p']}/locations/{g['z']}", name, "create")

    def qr_get(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['z']}/queuedResources/{g['id']}"
        qr = self.s.queued.get(name)
        if qr is None:
            return _not_found(name)
        if qr["state"]["state"] not in ("ACTIVE", "FAILED"):
            self.s.queued_polls[name] += 1
            steps = self.s.qr_progression
            state = steps[min(self.s.queued_polls[name], len(steps) - 1)]
            failure = self.s.qr_zone_failure.get(g["z"]) or self.s.qr_failure
            if g["z"] in self.s.qr_zone_failure and state != "CREATING":  # refused before it reaches the queue
                state = "ACTIVE"
            if g["z"] in self.s.qr_zone_hold and steps.index(state) > steps.index("WAITING_FOR_RESOURCES"):
                state = "WAITING_FOR_RESOURCES"
            if state == "ACTIVE" and failure:
                qr["state"] = {"state": "FAILED", "failedData": {"error": {"code": 8, "message": failure}}}
            elif state == "ACTIVE":
                qr["state"] = {"state": "ACTIVE", "activeData": {}}
                spec = qr["tpu"]["nodeSpec"][0]
                node = dict(spec["node"])
                node.update(name=f"{spec['parent']}/nodes/{spec['nodeId']}", state="READY",
                            networkEndpoints=[{"ipAddress": "192.0.2.7", "port": 8470,
                                               "accessConfig": {"externalIp": "198.51.100.7"}}])
                if not (node.get("networkConfig") or {}).get("enableExternalIps"):  # an internal IP only
                    for ep in node["networkEndpoints"]:
                        ep.pop("accessConfig", None)
                self.s.nodes[node["name"]] = node
            else:
                qr["state"] = {"state": state, "stateInitiator": "USER"}
        return qr

    def qr_delete(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['z']}/queuedResources/{g['id']}"
        qr = self.s.queued.pop(name, None)
        if qr is None:
            return _not_found(name)
        for spec in qr["tpu"]["nodeSpec"]:
            self.s.nodes.pop(f"{spec['parent']}/nodes/{spec['nodeId']}", None)
        return self._lro(f"projects/{g['p']}/locations/{g['z']}", name, "delete")

    def qr_list(self, g, q, body):
        prefix = f"projects/{g['p']}/locations/{g['z']}/queuedResources/"
        return {"queuedResources": [qr for name, qr in self.s.queued.items() if name.startswith(prefix)]}

    def node_list(self, g, q, body):
        prefix = f"projects/{g['p']}/locations/{g['z']}/nodes/"
        return {"nodes": [n for name, n in self.s.nodes.items() if name.startswith(prefix)]}

    def node_action(self, g, q, body):
        """nodes.stop / nodes.start; a node a queued resource created is refused as ``tpu_stop_refusal`` says."""
        name = f"projects/{g['p']}/locations/{g['z']}/nodes/{g['id']}"
        node = self.s.nodes.get(name)
        if node is None:
            return _not_found(name)
        if self.s.tpu_stop_refusal is not None:
            return _error(self.s.tpu_stop_refusal)
        node["state"] = "STOPPED" if g["verb"] == "stop" else "READY"
        return self._lro(f"projects/{g['p']}/locations/{g['z']}", name, g["verb"])

    def node_get(self, g, q, body):
        name = f"projects/{g['p']}/locations/{g['z']}/nodes/{g['id']}"
        return self.s.nodes.get(name) or _not_found(name)

    # -- Compute -------------------------------------------------------------------------------
    def vm_insert(self, g, q, body):
        name = f"projects/{g['p']}/zones/{g['z']}/instances/{body['name']}"
        if name in self.s.instances:
            return _error(already_exists())
        refusal = self.s.vm_zone_refusal.get(g["z"])
        if isinstance(refusal, Failure):
            return _error(refusal)
        if refusal is not None:  # the operation runs, then fails; no instance is left
            op = self._cop(f"projects/{g['p']}/zones/{g['z']}", name, "insert")
            self.s.operations[op["name"]] = {**op, "status": "DONE", "progress": 100, "httpErrorStatusCode": 503,
                                             "httpErrorMessage": "SERVICE UNAVAILABLE",
                                             "error": {"errors": [refusal]}}
            return op
        vm = dict(body)
        vm.update(status="PROVISIONING", id="4242", selfLink=name, creationTimestamp=self.s.now,
                  lastStartTimestamp=self.s.now)
        self.s.instances[name] = vm
        self.s.instance_polls[name] = 0
        return self._cop(f"projects/{g['p']}/zones/{g['z']}", name, "insert")

    def vm_get(self, g, q, body):
        name = f"projects/{g['p']}/zones/{g['z']}/instances/{g['id']}"
        vm = self.s.instances.get(name)
        if vm is None:
            return _not_found(name)
        self.s.instance_polls[name] += 1
        if vm["status"] in ("PROVISIONING", "STAGING"):
            vm["status"] = "STAGING" if self.s.instance_polls[name] < 2 else "RUNNING"
        if vm["status"] == "RUNNING":
            nic = vm["networkInterfaces"][0]
            nic["networkIP"] = "192.0.2.9"
            for ac in nic.get("accessConfigs", []):
                ac["natIP"] = "198.51.100.9"
        return vm

    def vm_delete(self, g, q, body):
        name = f"projects/{g['p']}/zones/{g['z']}/instances/{g['id']}"
        if self.s.instances.pop(name, None) is None:
            return _not_found(name)
        return self._cop(f"projects/{g['p']}/zones/{g['z']}", name, "delete")

    def vm_action(self, g, q, body):
        name = f"projects/{g['p']}/zones/{g['z']}/instances/{g['id']}"
        vm = self.s.instances.get(name)
        if vm is None:
            return _not_found(name)
        if g["verb"] == "stop":
            vm["status"] = "TERMINATED"
            vm["lastStopTimestamp"] = self.s.now
        elif g["verb"] == "start":
            vm["status"] = "RUNNING"
            vm["lastStartTimestamp"] = self.s.now
        else:
            vm["machineType"] = body["machineType"]
        return self._cop(f"projects/{g['p']}/zones/{g['z']}", name, g["verb"])

    def cop_get(self, g, q, body):
        if g["op"] in self.s.operations:
            return self.s.operations[g["op"]]
        return {"kind": "compute#operation", "name": g["op"], "status": "DONE", "progress": 100}

    def fw_insert(self, g, q, body):
        name = f"projects/{g['p']}/global/firewalls/{body['name']}"
        if name in self.s.firewalls:
            return _error(already_exists())
        self.s.firewalls[name] = body
        return self._cop(f"projects/{g['p']}/global", name, "insert")

    def fw_delete(self, g, q, body):
        name = f"projects/{g['p']}/global/firewalls/{g['id']}"
        if self.s.firewalls.pop(name, None) is None:
            return _not_found(name)
        return self._cop(f"projects/{g['p']}/global", name, "delete")

    def fw_get(self, g, q, body):
        name = f"projects/{g['p']}/global/firewalls/{g['id']}"
        fw = self.s.firewalls.get(name)
        return {**fw, "kind": "compute#firewall", "selfLink": name} if fw is not None else _not_found(name)

    def region_list(self, g, q, body):
        names = sorted({z.rsplit("-", 1)[0] for z in [*self.s.gpu_zones, *self.s.tpu_zones]} | set(self.s.region_quotas)
                       | {n.split("/")[3] for n in self.s.services})
        return {"kind": "compute#regionList", "items": [{"kind": "compute#region", "name": n, "status": "UP"}
                                                         for n in names]}

    def vm_aggregated(self, g, q, body):
        items: dict[str, dict] = {}
        for name, vm in self.s.instances.items():
            if name.startswith(f"projects/{g['p']}/"):
                items.setdefault(f"zones/{name.split('/')[3]}", {"instances": []})["instances"].append(vm)
        return {"kind": "compute#instanceAggregatedList", "items": items}

    def region_get(self, g, q, body):
        return {"kind": "compute#region", "name": g["r"], "status": "UP",
                "quotas": self.s.region_quotas.get(g["r"], [])}

    def gpu_types(self, g, q, body):
        items = {f"zones/{z}": {"acceleratorTypes": [{"kind": "compute#acceleratorType", "name": t, "zone": z,
                                                      "maximumCardsPerInstance": 8} for t in types]}
                 for z, types in self.s.gpu_zones.items()}
        return {"kind": "compute#acceleratorTypeAggregatedList", "items": items}

    # -- Secret Manager ------------------------------------------------------------------------
    def secret_create(self, g, q, body):
        name = f"projects/{g['p']}/secrets/{q['secretId']}"
        if name in self.s.secrets:
            return _error(already_exists())
        self.s.secrets[name] = {"secret": {**(body or {}), "name": name}, "versions": []}
        return {**(body or {}), "name": name}

    def secret_add(self, g, q, body):
        name = f"projects/{g['p']}/secrets/{g['id']}"
        if name not in self.s.secrets:
            return _not_found(name)
        versions = self.s.secrets[name]["versions"]
        versions.append(base64.b64decode(body["payload"]["data"]))
        return {"name": f"projects/{PROJECT_NUMBER}/secrets/{g['id']}/versions/{len(versions)}", "state": "ENABLED"}

    def secret_get(self, g, q, body):
        name = f"projects/{g['p']}/secrets/{g['id']}"
        s = self.s.secrets.get(name)
        return s["secret"] if s is not None else _not_found(name)

    def secret_delete(self, g, q, body):
        name = f"projects/{g['p']}/secrets/{g['id']}"
        return {} if self.s.secrets.pop(name, None) is not None else _not_found(name)

    def secret_access(self, g, q, body):
        name = f"projects/{g['p']}/secrets/{g['id']}"
        s = self.s.secrets.get(name)
        if s is None or not s["versions"]:
            return _not_found(name)
        return {"name": f"projects/{PROJECT_NUMBER}/secrets/{g['id']}/versions/{len(s['versions'])}",
                "payload": {"data": base64.b64encode(s["versions"][-1]).decode()}}

    # -- Quotas, Logging, Storage --------------------------------------------------------------
    def quota_list(self, g, q, body):
        return {"quotaInfos": self.s.quota_infos.get(g["svc"], [])}

    def log_list(self, g, q, body):
        size = int((body or {}).get("pageSize") or 50)
        entries = list(self.s.log_entries)
        if (body or {}).get("orderBy", "").endswith("desc"):
            entries = entries[::-1]
        return {"entries": entries[:size]}

    # objects: metadata, media, multipart and resumable uploads (what google-cloud-storage sends)
    def _put_object(self, bucket: str, name: str, data: bytes) -> dict:
        items = self.s.blobs.setdefault(bucket, [])
        items[:] = [b for b in items if b["name"] != name]
        import hashlib

        import google_crc32c  # comes with google-cloud-storage; the client checks crc32c after an upload

        obj = {"kind": "storage#object", "bucket": bucket, "name": name, "size": str(len(data)),
               "updated": "2026-11-20T18:00:00.000Z", "generation": str(next(self.s.counter)),
               "crc32c": base64.b64encode(google_crc32c.value(data).to_bytes(4, "big")).decode(),
               "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode()}
        items.append(obj)
        self.s.blob_data[(bucket, name)] = data
        return obj

    def blob_get(self, g, q, body):
        found = next((b for b in self.s.blobs.get(g["b"], []) if b["name"] == g["o"]), None)
        return found or _not_found(f"{g['b']}/{g['o']}")

    def blob_media(self, g, q, body):
        data = self.s.blob_data.get((g["b"], g["o"]))
        return Response(data, media_type="application/octet-stream") if data is not None else \
            _not_found(f"{g['b']}/{g['o']}")

    def blob_upload(self, g, q, body):
        if q.get("uploadType") == "resumable":
            meta = body if isinstance(body, dict) else {}
            upload_id = f"up-{next(self.s.counter)}"
            self.s.uploads[upload_id] = {"bucket": g["b"], "name": meta.get("name") or q.get("name"), "data": b""}
            return JSONResponse({}, headers={"Location": f"{self._base}/upload/storage/v1/b/{g['b']}/o?"
                                                         f"uploadType=resumable&upload_id={upload_id}"})
        # multipart/related: a JSON part, then the media part
        boundary = self._headers.get("content-type", "").split("boundary=")[-1].strip('"').encode()
        parts = [p for p in self._bytes.split(b"--" + boundary) if p.strip() not in (b"", b"--")]
        meta = json.loads(parts[0].split(b"\r\n\r\n", 1)[1].strip())
        media = parts[1].split(b"\r\n\r\n", 1)[1]
        return self._put_object(g["b"], meta.get("name") or q.get("name"), media.removesuffix(b"\r\n"))

    def blob_chunk(self, g, q, body):
        up = self.s.uploads.get(q.get("upload_id", ""))
        if up is None:
            return _not_found("upload")
        up["data"] += self._bytes
        m = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", self._headers.get("content-range", ""))
        total = m.group(3) if m else "*"
        if total != "*" and len(up["data"]) >= int(total):
            return self._put_object(up["bucket"], up["name"], up["data"])
        return Response(status_code=308, headers={"Range": f"bytes=0-{len(up['data']) - 1}"})

    def blob_list(self, g, q, body):
        prefix = q.get("prefix", "")
        items = [b for b in self.s.blobs.get(g["b"], []) if b["name"].startswith(prefix)]
        if g["b"] not in self.s.blobs:
            return _not_found(g["b"])
        return {"kind": "storage#objects", "items": items}


def build_app(state: GcpState) -> Starlette:
    app = _App(state)
    return Starlette(routes=[Route("/{path:path}", app.__call__, methods=["GET", "POST", "PATCH", "DELETE", "PUT"])])


class FakeGCP(ServerThread):
    def __init__(self, state: GcpState | None = None) -> None:
        self.state = state or GcpState()
        super().__init__(build_app(self.state))
