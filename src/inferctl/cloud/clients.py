"""One place that builds Google Cloud clients and calls them safely.

    ctx = CloudContext(project="my-proj")             # Application Default Credentials
    svc = await ctx.call(ctx.run().get_service, "get service gemma4", name=...)

Every call runs in a worker thread (the clients are blocking; the event loop keeps serving
progress bars and MCP requests), with a timeout and retries for transient errors (429, 500,
502, 503, 504), and a failure becomes a ``CloudError`` sentence.

Test seam: ``INFERCTL_GCP_ENDPOINT=http://127.0.0.1:PORT`` (or ``CloudContext(endpoint=...)``)
points every client at one local fake of the REST APIs. When an endpoint override is in force the
credentials are always anonymous, so real credentials are never sent to an arbitrary host.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from inferctl.cloud.errors import CloudError, is_stockout, translate

T = TypeVar("T")

ENDPOINT_ENV = "INFERCTL_GCP_ENDPOINT"
DEFAULT_TIMEOUT = 60.0
RETRY_DEADLINE = 120.0


class CloudContext:
    """Project, credentials and endpoint for every Google Cloud client inferctl uses."""

    def __init__(self, project: str, *, endpoint: str | None = None, credentials: Any = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.project = project
        self.endpoint = endpoint if endpoint is not None else (os.environ.get(ENDPOINT_ENV) or None)
        self._credentials = credentials
        self.timeout = timeout
        self._cache: dict[str, Any] = {}

    # -- credentials and options -----------------------------------------------------------

    def credentials(self) -> Any:
        if self._credentials is None and self.endpoint:
            from google.auth.credentials import AnonymousCredentials

            self._credentials = AnonymousCredentials()
        return self._credentials  # None: the clients use Application Default Credentials

    def _options(self) -> Any:
        from google.api_core.client_options import ClientOptions

        return ClientOptions(api_endpoint=self.endpoint) if self.endpoint else None

    def _gapic(self, key: str, factory: Callable[..., Any]) -> Any:
        if key not in self._cache:
            try:
                self._cache[key] = factory(transport="rest", credentials=self.credentials(),
                                           client_options=self._options())
            except Exception as exc:  # missing ADC surfaces here
                raise translate(exc, f"creating the {key} client") from None
        return self._cache[key]

    # -- clients (imports are lazy: google libraries load only when a cloud command runs) -----

    def run(self) -> Any:
        from google.cloud import run_v2

        return self._gapic("Cloud Run", run_v2.ServicesClient)

    def jobs(self) -> Any:
        from google.cloud import run_v2

        return self._gapic("Cloud Run jobs", run_v2.JobsClient)

    def executions(self) -> Any:
        from google.cloud import run_v2

        return self._gapic("Cloud Run executions", run_v2.ExecutionsClient)

    def tpu(self) -> Any:
        from google.cloud import tpu_v2

        return self._gapic("Cloud TPU", tpu_v2.TpuClient)

    def instances(self) -> Any:
        from google.cloud import compute_v1

        return self._gapic("Compute instances", compute_v1.InstancesClient)

    def firewalls(self) -> Any:
        from google.cloud import compute_v1

        return self._gapic("Compute firewalls", compute_v1.FirewallsClient)

    def zone_operations(self) -> Any:
        from google.cloud import compute_v1

        return self._gapic("Compute zone operations", compute_v1.ZoneOperationsClient)

    def global_operations(self) -> Any:
        from google.cloud import compute_v1

        return self._gapic("Compute global operations", compute_v1.GlobalOperationsClient)

    def regions(self) -> Any:
        from google.cloud import compute_v1

        return self._gapic("Compute regions", compute_v1.RegionsClient)

    def zones(self) -> Any:
        from google.cloud import compute_v1

        return self._gapic("Compute zones", compute_v1.ZonesClient)

    def accelerator_types(self) -> Any:
        from google.cloud import compute_v1

        return self._gapic("Compute accelerator types", compute_v1.AcceleratorTypesClient)

    def secrets(self) -> Any:
        from google.cloud import secretmanager_v1

        return self._gapic("Secret Manager", secretmanager_v1.SecretManagerServiceClient)

    def quotas(self) -> Any:
        from google.cloud import cloudquotas_v1

        return self._gapic("Cloud Quotas", cloudquotas_v1.CloudQuotasClient)

    def logging(self) -> Any:
        if "logging" not in self._cache:
            import google.cloud.logging

            try:
                # _use_grpc=False: the handwritten client's HTTP/JSON path (testable offline, no gRPC channel)
                self._cache["logging"] = google.cloud.logging.Client(
                    project=self.project, credentials=self.credentials(), _use_grpc=False,
                    client_options=self._options())
            except Exception as exc:
                raise translate(exc, "creating the Cloud Logging client") from None
        return self._cache["logging"]

    def storage(self) -> Any:
        if "storage" not in self._cache:
            from google.cloud import storage

            try:
                self._cache["storage"] = storage.Client(project=self.project, credentials=self.credentials(),
                                                        client_options=self._options())
            except Exception as exc:
                raise translate(exc, "creating the Cloud Storage client") from None
        return self._cache["storage"]

    # -- calling ---------------------------------------------------------------------------

    def call_sync(self, fn: Callable[..., T], what: str, /, *args: Any, **kwargs: Any) -> T:
        """Call a client method with retry + timeout; errors become CloudError. Blocking."""
        from google.api_core import exceptions as gexc
        from google.api_core import retry as gretry

        def transient(exc: BaseException) -> bool:
            if isinstance(exc, gexc.TooManyRequests):  # 429 is also how quota errors arrive: never retry those
                return "quota" not in str(exc).lower() and getattr(exc, "reason", None) != "QUOTA_EXCEEDED"
            if is_stockout(str(exc)):  # a 503 ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: another zone, not a retry
                return False
            return isinstance(exc, (gexc.InternalServerError, gexc.BadGateway, gexc.ServiceUnavailable,
                                    gexc.GatewayTimeout))

        retry = gretry.Retry(predicate=transient, initial=0.5, maximum=10.0, multiplier=2.0, timeout=RETRY_DEADLINE)
        try:
            if getattr(fn, "_inferctl_plain", False):
                return fn(*args, **kwargs)
            return retry(functools.partial(fn, *args, timeout=self.timeout, **kwargs))()
        except CloudError:
            raise
        except Exception as exc:
            raise translate(exc, what) from None

    async def call(self, fn: Callable[..., T], what: str, /, *args: Any, **kwargs: Any) -> T:
        """``call_sync`` in a worker thread, so the event loop is never blocked."""
        import anyio

        return await anyio.to_thread.run_sync(functools.partial(self.call_sync, fn, what, *args, **kwargs))


def plain(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark a callable that takes no ``timeout=`` keyword (handwritten clients, iterators we drain)."""
    fn._inferctl_plain = True  # type: ignore[attr-defined]
    return fn


def to_dict(message: Any) -> dict[str, Any]:
    """A proto-plus message as REST JSON (camelCase, enum names), the shape gcp.md documents."""
    import json

    return json.loads(type(message).to_json(message, use_integers_for_enums=False,
                                            always_print_fields_with_no_presence=False))
