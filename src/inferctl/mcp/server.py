"""The MCP face of inferctl: tools, resources and prompts over the same use cases the CLI calls.

    build_server(Policy(allow_write=False))   # the tools the policy permits, every resource and prompt
    serve_stdio(policy)                       # what `inferctl mcp` runs
    serve_http(policy, host, port, token)     # `inferctl mcp --http`: streamable HTTP, bearer-token guarded
                                              # (a token is required off loopback, and with --allow-write)

Tools live in tools_observe (endpoints), tools_runs (benchmarks, runs, planning), tools_reports (report,
compare, cost) and tools_cloud (Google Cloud); policy.py says which are listed. Nothing here writes to
stdout: on stdio, stdout is the wire.
"""

import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

from inferctl import __version__
from inferctl.errors import InferctlError
from inferctl.mcp.policy import Policy, ToolSpec

log = logging.getLogger("inferctl.mcp")

INSTRUCTIONS = """\
inferctl operates self-hosted vLLM servers: the local demo engine, any vLLM URL, and Google Cloud deployments
(Cloud Run GPU, GCE GPU VMs, TPU VMs) described by deployment profiles.
Start with list_targets; pass one of its names as `target`. get_status / verify_health / get_model_info /
get_metrics / query_model observe an endpoint; fetch_logs / analyze_logs / suggest_remediation triage it.
Benchmarks run in the background: start_benchmark returns a run id, get_benchmark_status polls it.
plan_serving and simulate_sweep answer "will it fit, how fast, at what cost" without hardware.
This server is {mode}.{write_note}"""


class InferctlServer(MCPServer):
    """An MCPServer that knows its policy (tools and resolvers read it from ``ctx.mcp_server.policy``)."""

    def __init__(self, policy: Policy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.policy = policy

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Refuse unknown argument names: the SDK drops them, so a misspelled one would silently run the default."""
        tool = self._tool_manager.get_tool(name)
        if tool is not None and arguments:
            fields = tool.fn_metadata.arg_model.model_fields
            accepted = {f.alias or n for n, f in fields.items()} - {tool.context_kwarg}
            unknown = sorted(k for k in arguments if k not in accepted)
            if unknown:
                raise ToolError(f"{name} has no argument {', '.join(repr(k) for k in unknown)}; its arguments are: "
                                f"{', '.join(sorted(accepted)) or 'none'}.")
        return await super().call_tool(name, arguments, context)

    async def list_tools(self) -> list[Any]:
        """The SDK's tool list with compact input schemas and compact, shallow output schemas (issue 14.6)."""
        from inferctl.mcp.schemas import compact_input, compact_output

        return [t.model_copy(update={"input_schema": compact_input(t.input_schema),
                                     "output_schema": compact_output(t.output_schema) if t.output_schema else None})
                for t in await super().list_tools()]


def all_tools() -> list[ToolSpec]:
    """Every tool inferctl has, whatever the policy (docs and tests use this)."""
    from inferctl.mcp import tools_cloud, tools_observe, tools_reports, tools_runs

    return [*tools_observe.tools(), *tools_runs.tools(), *tools_reports.tools(), *tools_cloud.tools()]


def build_server(policy: Policy | None = None) -> InferctlServer:
    """The server with the tools ``policy`` permits; write tools are simply not registered when read-only."""
    policy = policy or Policy()
    note = "" if policy.allow_write else (" Tools that change things (deploy, scale, destroy, start_benchmark, "
                                          "set_hf_token, manage_local_engine) are hidden; the user can restart "
                                          "`inferctl mcp --allow-write`.")
    server = InferctlServer(policy, name="inferctl", version=__version__,
                            instructions=INSTRUCTIONS.format(mode=policy.mode, write_note=note))
    for spec in all_tools():
        if policy.permits(spec.access):
            server.add_tool(spec.fn, name=spec.name, title=spec.title, annotations=spec.annotations,
                            structured_output=True)
    _resources(server)
    _prompts(server)
    return server


# -- resources ------------------------------------------------------------------------------------------

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


def metrics_doc() -> str:
    """docs/metrics.md from a source checkout; the definitions in bench.stats otherwise (wheels ship no docs)."""
    path = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    from inferctl.bench import stats

    return "# Metric definitions\n\n" + (stats.__doc__ or "")


def run_report(run_id: str) -> str:
    """A run as markdown (report.md, written next to the run by ``ops.report``)."""
    if not RUN_ID.match(run_id):
        raise ResourceNotFoundError(f"No run '{run_id}'.")
    from inferctl.ops.report import report

    try:
        written = report(run_id, png=False, html=False)
    except InferctlError as exc:
        raise ResourceNotFoundError(str(exc)) from None
    return Path(written.markdown).read_text(encoding="utf-8")


def _resources(server: MCPServer) -> None:
    @server.resource("inferctl://docs/metrics", name="metric-definitions", mime_type="text/markdown",
                     description="What TTFT, TPOT, ITL, E2E, goodput and every server metric mean here.")
    def metric_definitions() -> str:
        return metrics_doc()

    @server.resource("inferctl://profiles", name="deployment-profiles", mime_type="application/json",
                     description="Every deployment profile: platform, location, accelerator, model.")
    def profiles() -> str:
        from inferctl.ops.profiles import list_profile_summaries

        try:
            return json.dumps([p.model_dump(mode="json") for p in list_profile_summaries()], indent=1)
        except InferctlError as exc:
            raise ResourceError(str(exc)) from None

    @server.resource("inferctl://profiles/{name}", name="deployment-profile", mime_type="application/json",
                     description="One deployment profile with its vLLM command line and validation.")
    def profile(name: str) -> str:
        from inferctl.ops.profiles import show_profile

        try:
            return show_profile(name).model_dump_json(indent=1)
        except InferctlError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    @server.resource("inferctl://runs/{run_id}/report", name="run-report", mime_type="text/markdown",
                     description="A benchmark / imported / simulated run as a markdown report.")
    def report(run_id: str) -> str:
        return run_report(run_id)


# -- prompts --------------------------------------------------------------------------------------------


def _prompts(server: MCPServer) -> None:
    @server.prompt(name="triage_incident", title="Triage an incident on a target")
    def triage_incident(target: str = "local") -> str:
        """Walk an SRE triage of one serving target: state, health, load, logs, likely causes, a fix."""
        return (f"Triage the vLLM serving target '{target}' with the inferctl tools, in this order, and stop "
                "to report as soon as the cause is clear:\n"
                f"1. get_status(target='{target}'): reachable, healthy, load, KV-cache usage, queue.\n"
                f"2. verify_health(target='{target}'): does the model really answer, and how fast.\n"
                f"3. If it is a deployment profile: describe_deployment('{target}') for the cloud side.\n"
                f"4. analyze_logs(target='{target}', since='1h'); if the target is down, ask_target='local'.\n"
                "5. suggest_remediation with the most serious error found.\n"
                "Report: what is wrong (one sentence), the evidence (numbers, log lines), the likely cause, and "
                "the next action. Do not change anything (deploy/scale/destroy) without asking me.")

    @server.prompt(name="choose_hardware", title="Choose hardware for a model and a load")
    def choose_hardware(model: str = "gemma-4-12b", users: str = "64", context: str = "4096") -> str:
        """Find the cheapest deployment of a model for a load, with predicted speed and monthly cost."""
        return (f"I need to serve {model} to about {users} concurrent users at a {context}-token context. "
                "Use inferctl to choose the hardware:\n"
                f"1. plan_serving with a workload: models ['{model}'], users {users} with the think time I give "
                f"(or ask me for the peak requests/s as rate), prompt_tokens {{'fixed': {context}}}, output_tokens "
                "(ask me, or 256), the SLOs I care about (e.g. ttft_p95_ms=1000, tpot_p95_ms=50) and my daily "
                "traffic shape (peak_hours, off_peak). It ranks every accelerator, format, TP, KV dtype, MTP, "
                "platform and price tier by monthly cost.\n"
                "2. For the top two, plan_serving with their accelerator/quant/kv_dtype (no workload) for the "
                "memory picture, and simulate_sweep with concurrencies around "
                f"{users} and contexts [{context}].\n"
                "3. find_capacity for the winner's accelerator to see where quota exists.\n"
                "Answer with the ranked table (replicas, USD/month, limiting factor) and one recommendation, and say "
                "which numbers are predictions.")

    @server.prompt(name="compare_configurations", title="Compare two serving configurations")
    def compare_configurations(run_a: str = "", run_b: str = "") -> str:
        """Compare two runs (e.g. MTP on vs off, QAT vs bf16, L4 vs RTX PRO 6000) cell by cell."""
        which = f"runs '{run_a}' and '{run_b}'" if run_a and run_b else "the two most relevant runs from list_runs"
        return (f"Compare {which} with inferctl.\n"
                "1. compare_runs on the two runs: per-cell throughput, TTFT, TPOT, error rates and verdicts; "
                "get_run_report on each for its saturation point and SLO capacity.\n"
                "2. Say where each configuration wins: low concurrency vs high, short vs long context.\n"
                "3. If the runs measured different hardware, include cost per million tokens (estimate_cost "
                "with both run ids).\n"
                "Answer with a short table of the decisive cells and a recommendation; flag any cell with errors or a "
                "client-bound load generator as unreliable.")


# -- transports -------------------------------------------------------------------------------------------


def configure_logging(level: str = "INFO") -> None:
    """stderr only (stdout carries the protocol on stdio); quiet the chatty HTTP libraries."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("httpx", "httpcore", "urllib3", "google"):
        logging.getLogger(name).setLevel(logging.WARNING)


def serve_stdio(policy: Policy) -> None:
    configure_logging()
    server = build_server(policy)
    log.info("inferctl MCP server on stdio (%s, %d tools)", policy.mode,
             sum(policy.permits(s.access) for s in all_tools()))
    server.run()


LOOPBACK = ("127.0.0.1", "localhost", "::1")


WRITE_NEEDS_TOKEN = ("--allow-write over HTTP needs a bearer token, on loopback too (any local process or a "
                     "DNS-rebinding web page could otherwise deploy or destroy); put a long random token in an "
                     "environment variable, e.g. `export INFERCTL_MCP_TOKEN=$(openssl rand -hex 32)`, and pass "
                     "--token-env INFERCTL_MCP_TOKEN.")


def check_http_policy(policy: Policy, *, host: str, token: str | None) -> None:
    """Refuse to serve HTTP without a token off loopback, or with write tools anywhere."""
    from inferctl.errors import ConfigError

    if token:
        return
    if policy.allow_write:
        raise ConfigError(WRITE_NEEDS_TOKEN)
    if host not in LOOPBACK:
        raise ConfigError(f"Refusing to serve MCP on {host} without a bearer token; pass --token-env VAR naming an "
                          "environment variable that holds one, or bind to 127.0.0.1.")


def http_app(policy: Policy, *, host: str, token: str | None):
    """The streamable-HTTP Starlette app, behind a bearer-token check when ``token`` is set."""
    from mcp.server.transport_security import TransportSecuritySettings

    check_http_policy(policy, host=host, token=token)
    server = build_server(policy)
    # On loopback the SDK's own Host/Origin check guards against DNS rebinding. Off loopback every request must
    # carry the token, which a rebinding page cannot add, and the Host check would reject every real hostname.
    security = None if host in LOOPBACK else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(host=host, transport_security=security)
    return BearerAuth(app, token) if token else app


class BearerAuth:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>`` (compared in constant time)."""

    def __init__(self, app, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope, receive, send) -> None:
        import hmac

        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if not (given[:7].lower() == b"bearer " and hmac.compare_digest(given[7:].strip(), self.token)):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b'{"error": "missing or wrong bearer token"}'})
                return
        await self.app(scope, receive, send)


def serve_http(policy: Policy, *, host: str, port: int, token: str | None) -> None:
    import anyio
    import uvicorn

    check_http_policy(policy, host=host, token=token)
    configure_logging()
    app = http_app(policy, host=host, token=token)
    log.info("inferctl MCP server on http://%s:%d/mcp (%s%s)", host, port, policy.mode,
             ", bearer token required" if token else "")
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", log_config=None)
    anyio.run(uvicorn.Server(config).serve)
