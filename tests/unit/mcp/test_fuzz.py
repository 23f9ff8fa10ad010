"""Property-based fuzzing of every tool's arguments: any input gets a result, a ToolError or a schema error,
never a crash (the SDK's bare "Error executing tool NAME") and never a hang."""

from __future__ import annotations

import os

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.mcp.conftest import client, text

from inferctl.errors import LocalEngineError
from inferctl.mcp.server import all_tools

CALL_LIMIT_S = 60
# CI: a few fixed examples per tool (reproducible, well under a minute). Locally, INFERCTL_FUZZ_EXAMPLES=200
# explores with fresh random examples.
EXAMPLES = int(os.environ.get("INFERCTL_FUZZ_EXAMPLES", "6"))
DERANDOMIZE = "INFERCTL_FUZZ_EXAMPLES" not in os.environ
INTERESTING = ["local", "nope", "cloudrun-l4-12b-qat", "tpu-v6e-1-12b", "http://127.0.0.1:9", "latest", "../../etc",
               "gemma-4-12b", "l4", "HF_TOKEN", "1h", "ttft_p95_ms=500", "", " ", "gs://weights", "x" * 400]
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=30), st.lists(st.integers(-2, 64), max_size=3),
                 st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def mostly(typed: st.SearchStrategy, junk: st.SearchStrategy = JUNK) -> st.SearchStrategy:
    """Nine times in ten a well-typed value (so validation passes and the tool body runs), else junk."""
    return st.integers(0, 9).flatmap(lambda n: junk if n == 0 else typed)


def value_for(schema: dict) -> st.SearchStrategy:
    variants = schema.get("anyOf", [schema])
    kinds = {s.get("type") for s in variants}
    typed: list[st.SearchStrategy] = []
    if "string" in kinds:
        enum = [e for s in variants for e in s.get("enum", [])]
        pattern = next((s["pattern"] for s in variants if "pattern" in s), None)
        free = st.from_regex(pattern, fullmatch=True) if pattern else st.text(max_size=40)
        typed.append(st.sampled_from(enum) if enum else st.one_of(st.sampled_from(INTERESTING), free))
    if "integer" in kinds or "number" in kinds:
        typed.append(st.integers(-2, 300))
    if "boolean" in kinds:
        typed.append(st.booleans())
    for s in variants:
        if s.get("type") == "array":
            low = s.get("minItems", 0)
            typed.append(st.lists(value_for(s.get("items", {})), min_size=low, max_size=max(low, 4)))
    if "null" in kinds:
        typed.append(st.none())
    return mostly(st.one_of(*typed)) if typed else JUNK


def arguments(schema: dict) -> st.SearchStrategy:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    # Optional arguments appear one time in three, so one junk value rarely masks every other argument.
    fields = {k: value_for(v) if k in required else st.integers(0, 2).flatmap(
        lambda n, v=v: value_for(v) if n == 0 else st.just(...)) for k, v in props.items()}
    return st.fixed_dictionaries(fields).map(lambda d: {k: v for k, v in d.items() if v is not ...})


@pytest.fixture(scope="module")
def session():
    """One server (read-write, so write tools are fuzzed too) and one client for every example."""
    with start_blocking_portal() as portal:
        c = portal.wrap_async_context_manager(client(allow_write=True))
        with c as connected:
            schemas = {t.name: t.input_schema for t in portal.call(connected.list_tools).tools}
            yield portal, connected, schemas


@pytest.fixture
def no_side_effects(monkeypatch, gcp):
    """Fuzzing must not start engines or benchmark processes: those entry points refuse."""
    from inferctl.mcp import jobs
    from inferctl.ops import local

    def refuse(*args, **kwargs):
        raise LocalEngineError("disabled while fuzzing")

    monkeypatch.setattr(local, "up", refuse)
    monkeypatch.setattr(local, "down", refuse)
    monkeypatch.setattr(jobs, "start", refuse)
    return gcp


@pytest.mark.parametrize("name", sorted(s.name for s in all_tools()))
def test_tool_never_crashes_or_hangs(name, session, no_side_effects):
    portal, c, schemas = session

    async def call(args):
        with anyio.fail_after(CALL_LIMIT_S):
            return await c.call_tool(name, args)

    outcomes: list[str] = []

    @settings(max_examples=EXAMPLES, derandomize=DERANDOMIZE, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(args=arguments(schemas[name]))
    def check(args):
        result = portal.call(call, args)
        message = text(result)
        outcomes.append("ok" if not result.is_error else "schema" if "validation error" in message else "tool-error")
        if result.is_error:
            assert message.strip() != f"Error executing tool {name}", f"{name} crashed on {args!r}"
            assert "Traceback" not in message

    check()
    # The strategies are meant to get past validation most of the time; a tool only ever rejected by the
    # schema was not fuzzed at all.
    assert set(outcomes) - {"schema"}, f"{name}: every example failed validation"
