"""One declaration per parameter (issue 10.4): the inputs the CLI and the MCP tools share.

Each ``Param`` is the one place a parameter's name, type, default, bounds and help text are written.
``cli/options.py`` turns it into a ``typer.Option`` (bounds as ``min=``/``max=``) and ``mcp/params.py``
into a pydantic ``Field`` (bounds as ``ge``/``le``, choices as a ``Literal``, string limits as
``max_length``/``pattern``), so `inferctl plan --count` and ``plan_serving(count=...)`` cannot drift.

The name is the MCP argument's and the Python parameter's; the CLI flag is the name with dashes unless
``flags`` says otherwise (a repeatable flag is named for one value, ``--slo``; an older spelling stays an
alias). Standard library only: `inferctl --help` imports this and must stay light.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RUN_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$"  # a run id, never a path
MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]*$"


@dataclass(frozen=True)
class Param:
    """A parameter of an operation, as both faces show it."""

    name: str
    type: Any
    help: str
    default: Any = None
    flags: tuple[str, ...] = ()  # CLI spellings, the first shown first; default ("--name-with-dashes",)
    ge: float | None = None
    le: float | None = None
    choices: tuple[str, ...] | None = None  # MCP: a Literal; the CLI checks them in the operation
    min_length: int | None = None  # MCP only: strings (or lists) shorter than this are refused
    max_length: int | None = None  # MCP only: strings (or lists) longer than this are refused
    item_max_length: int | None = None  # MCP only: for a list of strings, each string's limit
    pattern: str | None = None  # MCP only: the string must match

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)


# -- the server a command talks to ----------------------------------------------------------------------------

SERVED_MODEL = Param("model", str | None, "Served model name; default: the first one served.",
                     flags=("--model", "-m"), max_length=300)

# -- a serving configuration (plan, simulate, calibrate, sim serve; plan_serving, simulate_sweep) -------------

MODEL = Param("model", str | None, "Catalog model (gemma-4-12b, gemma-4-26b-moe...), HF id, or a directory "
              "with a config.json; not needed with a profile.", min_length=1, max_length=200, pattern=MODEL_PATTERN)
ACCELERATOR = Param("accelerator", str, "l4, rtx-pro-6000, a100-40, a100-80, h100, h200, tpu-v5e, tpu-v6e, cpu.",
                    "l4", flags=("--accelerator", "-a"), min_length=1, max_length=40)
COUNT = Param("count", int, "Devices in the deployment (tensor parallel across them).", 1, ge=1, le=64)
QUANT = Param("quant", str, "Weight format: bf16, fp8 or w4a16 (QAT/int4).", "bf16",
              choices=("bf16", "fp8", "w4a16"))
KV_DTYPE = Param("kv_dtype", str, "KV-cache dtype: auto or fp8.", "auto", choices=("auto", "fp8"))
MAX_MODEL_LEN = Param("max_model_len", int | None, "Context length (default: the model's).", ge=16, le=2_000_000)
SPECULATIVE = Param("speculative", str | None, "Speculative decoding: mtp[:N][@a1,a2,..], ngram[:N] or off.",
                    max_length=60)
PRICE_PER_HOUR = Param("price_per_hour", float | None, "USD per device-hour, for cost per million tokens "
                       "(default: the price catalog's for the profile or accelerator).", ge=0, le=10_000)
PROFILE = Param("profile", str | None, "A deployment profile (inferctl profiles, or the list_targets tool) "
                "instead of these settings.", max_length=100)

# -- plan's speed estimate ----------------------------------------------------------------------------------

PLAN_CONTEXT = Param("context", int, "Prompt tokens for the speed prediction.", 1024, ge=1, le=2_000_000)
PLAN_OUTPUT_TOKENS = Param("output_tokens", int, "Output tokens for the speed prediction.", 256, ge=1, le=65536)

# -- a sweep's load (bench sweep, simulate; start_benchmark, simulate_sweep) ----------------------------------

OUTPUT_TOKENS = Param("output_tokens", int | None, "Output tokens per request (max_tokens; default: the preset's, "
                      "else 128).", ge=1, le=65536)
REQUESTS_PER_CELL = Param("requests_per_cell", int | None, "Minimum measured requests per cell (default "
                          "4 x concurrency, at least 20).", flags=("--requests", "--requests-per-cell", "-n"),
                          ge=1, le=10_000_000)  # a soak is 1,000,000 (benchmarks/soak.py)
API = Param("api", str, "Which OpenAI API to load: chat or completions.", "chat", choices=("chat", "completions"))
SLOS = Param("slos", list[str] | None, "Goodput SLOs like ttft_p95_ms=500 or tpot_p50_ms=50 (CLI: repeat --slo); "
             "goodput counts requests meeting every one.", flags=("--slo",), max_length=4, item_max_length=40)
RESUME = Param("resume", str | None, "Finish the missing cells of this interrupted run instead (its grid and "
               "target come from the run).", pattern=RUN_PATTERN)
