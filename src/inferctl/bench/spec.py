"""What a sweep is asked to do: the grid, the load, the workload, and the named presets.

A sweep is rows of cells: one row per context length, cells ordered by concurrency (or rate) so a
row can stop early once the server saturates. ``SweepSpec`` is stored in meta.json as ``grid`` and
is all ``--resume`` needs to rebuild the same cells.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from inferctl.bench.stats import Slo
from inferctl.errors import ConfigError

POWERS_OF_TWO_TO_2048 = [2**i for i in range(12)]
MAX_LIST_VALUES = 1024  # a grid axis longer than this is a typo (or an attack), not a benchmark
MAX_INT_VALUE = 10_000_000  # no concurrency or context length is larger; a bigger one is a typo
MAX_RATE = 1_000_000.0  # requests/s
SEED_CONTEXTS = [2**i for i in range(2, 15)]  # 4 ... 16384, the seed's 13 context sizes


class CellSpec(BaseModel):
    """One cell of the grid."""

    id: str
    row: int
    context: int
    concurrency: int | None = None
    rate: float | None = None


class SweepSpec(BaseModel):
    """A sweep: contexts × (concurrencies or rates), and how each cell is loaded."""

    preset: str | None = None
    contexts: list[int]
    concurrencies: list[int] = Field(default_factory=list)
    rates: list[float] | None = Field(default=None, description="Open loop: requests/s per cell.")
    max_concurrency: int | None = Field(default=None, description="Open loop: cap on requests in flight.")
    burstiness: float = Field(default=1.0, description="Gamma shape of arrivals; 1 = Poisson.")
    output_tokens: int = 128
    ignore_eos: bool = True
    api: Literal["chat", "completions"] = "chat"
    requests: int | None = Field(default=None, description="Minimum measured requests per cell (default: 4×c, ≥20).")
    duration: float | None = Field(default=None, description="Minimum seconds per cell.")
    warmup: int | None = Field(default=None, description="Warm-up requests per cell (default: one wave, ≤256).")
    seed: int = 0
    shared_prefix: int = 0
    slos: list[Slo] = Field(default_factory=list)
    error_threshold: float = Field(default=0.5, description="A row stops after a cell with a higher error rate.")
    timeout: float = Field(default=600.0, description="Per-request timeout, seconds (a stall counts).")
    workers: int | Literal["auto"] = Field(
        default="auto", description="Load-generator processes; auto: by load (≈128 streams or 150 req/s each, "
                                    "≤ usable cores), raised after a client-bound cell.")
    transport: Literal["auto", "raw", "aiohttp", "httpx"] = "auto"
    tokenizer: str | None = Field(
        default=None, description="Directory with the model's tokenizer files, for servers without /tokenize.")
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description='Fields added to every request body, e.g. {"return_token_ids": true}.')

    def cells(self) -> list[CellSpec]:
        """The grid in run order: rows by context, then ascending load."""
        out: list[CellSpec] = []
        for row, ctx in enumerate(self.contexts):
            if self.rates:
                for r in self.rates:
                    out.append(CellSpec(id=f"ctx{ctx}-r{r:g}", row=row, context=ctx, rate=r,
                                        concurrency=self.max_concurrency))
            else:
                for c in self.concurrencies:
                    out.append(CellSpec(id=f"ctx{ctx}-c{c}", row=row, context=ctx, concurrency=c))
        return out

    def validate_grid(self) -> SweepSpec:
        if not self.contexts:
            raise ConfigError("The grid has no context lengths; pass --context 128,1024 or a --preset.")
        if not self.rates and not self.concurrencies:
            raise ConfigError("The grid has no load; pass --concurrency 1,2,4 or --rate 1,5,10.")
        if any(c < 1 for c in self.contexts) or any(c < 1 for c in self.concurrencies):
            raise ConfigError("Context lengths and concurrencies must be positive integers.")
        if self.rates and any(r <= 0 for r in self.rates):
            raise ConfigError("Rates must be positive requests per second.")
        if self.output_tokens < 1:
            raise ConfigError("--output-tokens must be at least 1.")
        if self.burstiness <= 0:
            raise ConfigError("--burstiness must be positive (1 = Poisson).")
        if not 0 < self.error_threshold <= 1:
            raise ConfigError("--error-threshold is a fraction between 0 and 1.")
        if self.workers != "auto" and self.workers < 1:
            raise ConfigError("--workers must be at least 1.")
        if self.requests is not None and self.requests < 1:
            raise ConfigError(f"--requests must be at least 1 (got {self.requests}).")
        if self.warmup is not None and self.warmup < 0:
            raise ConfigError(f"--warmup must be 0 or more (got {self.warmup}).")
        if self.duration is not None and not self.duration >= 0:
            raise ConfigError(f"--duration must be 0 or more seconds (got {self.duration:g}).")
        if not self.timeout > 0:
            raise ConfigError(f"--timeout must be more than 0 seconds (got {self.timeout:g}).")
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ConfigError(f"--max-concurrency must be at least 1 (got {self.max_concurrency}).")
        if self.shared_prefix < 0:
            raise ConfigError(f"--shared-prefix must be 0 or more tokens (got {self.shared_prefix}).")
        return self


PRESETS: dict[str, dict] = {
    # The seed system's grid (seed-system.md §2.4): 12 concurrencies × 13 contexts. The seed asked
    # for 1-10 output tokens; 128 measures decode too (pass --output-tokens 10 to match it).
    "seed-grid": {"concurrencies": POWERS_OF_TWO_TO_2048, "contexts": SEED_CONTEXTS, "output_tokens": 128},
    # A demo that finishes in a minute or two on the CPU local engine.
    "quick": {"concurrencies": [1, 2, 4], "contexts": [128, 512], "output_tokens": 32, "requests": 8,
              "warmup": 1},
}


def preset(name: str) -> dict:
    """The flags a preset stands for; explicit flags override them."""
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ConfigError(f"Unknown preset '{name}'; presets: {', '.join(PRESETS)}.") from None


def parse_int_list(text: str, flag: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4]; '1..64' -> powers of two from 1 to 64. Every value is 1..``MAX_INT_VALUE``.

    Raises ConfigError (one sentence with the allowed range) for a value out of range, a range that
    runs backwards, or more than ``MAX_LIST_VALUES`` values.
    """
    text = text.strip()
    usage = "use a comma list like 1,2,4 or a doubling range like 1..64"
    try:
        if ".." in text:
            lo, hi = (int(x) for x in text.split("..", 1))
            if lo < 1:
                raise ConfigError(f"Bad {flag} {text!r}: a doubling range starts at 1 or more (got {lo}).")
            _check_max(flag, text, hi)
            if hi < lo:
                raise ConfigError(f"Bad {flag} {text!r}: the range ends below its start; {usage}.")
            count = (hi // lo).bit_length()  # lo, 2lo, 4lo ... <= hi, counted without building it
            _check_count(flag, text, count)
            return [lo << i for i in range(count)]
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"Bad {flag} {text!r}; {usage}.") from None
    _check_count(flag, text, len(values))
    if low := [v for v in values if v < 1]:
        raise ConfigError(f"Bad {flag} {text!r}: values must be at least 1 (got {low[0]}).")
    _check_max(flag, text, max(values, default=0))
    return values


def parse_float_list(text: str, flag: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"Bad {flag} {text!r}; use a comma list like 0.5,1,2.") from None
    _check_count(flag, text, len(values))
    if bad := [v for v in values if not (0 < v <= MAX_RATE)]:
        raise ConfigError(f"Bad {flag} {text!r}: values must be more than 0 and at most {MAX_RATE:,.0f} "
                          f"(got {bad[0]:g}).")
    return values


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _check_max(flag: str, text: str, value: int) -> None:
    if value > MAX_INT_VALUE:
        shown = str(value) if value < 10**15 else f"a {len(str(value))}-digit number"
        raise ConfigError(f"Bad {flag} {_shown(text)}: values must be at most {MAX_INT_VALUE:,} (got {shown}).")


def _check_count(flag: str, text: str, count: int) -> None:
    if count > MAX_LIST_VALUES:
        raise ConfigError(f"Bad {flag} {_shown(text)}: {count} values is more than the {MAX_LIST_VALUES} a grid "
                          "axis may have; use fewer values.")


_preset = preset  # spec_from_flags's ``preset`` argument shadows the function


def spec_from_flags(*, preset: str | None = None, concurrency: str | None = None, context: str | None = None,
                    rate: str | None = None, max_concurrency: int | None = None, burstiness: float = 1.0,
                    output_tokens: int | None = None, natural_stop: bool = False, api: str = "chat",
                    requests: int | None = None, duration: float | None = None, warmup: int | None = None,
                    seed: int = 0, shared_prefix: int = 0, slo: list[str] | None = None,
                    error_threshold: float = 0.5, timeout: float = 600.0, workers: int | str = "auto",
                    transport: str = "auto", extra_body: str | None = None,
                    tokenizer: str | None = None) -> SweepSpec:  # fmt: skip
    """The SweepSpec the grid flags of `inferctl bench sweep` describe (also `inferctl simulate`'s).

    Arguments are the flags as typed: ``concurrency`` / ``context`` are lists like ``"1,2,4"`` or
    ``"1..256"``, ``rate`` requests/s per cell (open loop; then concurrencies default to none), ``slo``
    strings like ``"ttft_p95_ms=500"``, ``workers`` a number or ``"auto"``. A ``preset`` (``seed-grid``,
    ``quick``) supplies the grid and the other flags override it; ``natural_stop`` is the inverse of
    ``ignore_eos``. Raises ConfigError (one sentence) on a bad value; the grid is validated.
    """
    from inferctl.bench.stats import parse_slo

    base = _preset(preset) if preset else {}
    if concurrency is not None:
        base["concurrencies"] = parse_int_list(concurrency, "--concurrency")
    if context is not None:
        base["contexts"] = parse_int_list(context, "--context")
    if rate is not None:
        base["rates"] = parse_float_list(rate, "--rate")
        base.setdefault("concurrencies", [])
    for key, value in (("output_tokens", output_tokens), ("requests", requests), ("duration", duration),
                       ("warmup", warmup), ("max_concurrency", max_concurrency)):  # fmt: skip
        if value is not None:
            base[key] = value
    if api not in ("chat", "completions"):
        raise ConfigError("--api is chat or completions.")
    if transport not in ("auto", "raw", "aiohttp", "httpx"):
        raise ConfigError("--transport is auto, raw, aiohttp or httpx.")
    base.setdefault("contexts", [])
    if workers != "auto":
        try:
            workers = int(workers)
        except ValueError:
            raise ConfigError(f"--workers is a number or auto, not {workers!r}.") from None
    return SweepSpec(preset=preset, burstiness=burstiness, ignore_eos=not natural_stop, api=api, seed=seed,
                     shared_prefix=shared_prefix, slos=[parse_slo(s) for s in slo or []],
                     error_threshold=error_threshold, timeout=timeout, workers=workers, transport=transport,
                     extra_body=parse_extra_body(extra_body), tokenizer=tokenizer,
                     **base).validate_grid()  # fmt: skip


# Fields the benchmark itself sets: overriding them would change what is measured without saying so.
RESERVED_BODY_FIELDS = ("model", "messages", "prompt", "stream", "stream_options", "max_tokens")


def parse_extra_body(text: str | None) -> dict[str, Any]:
    """--extra-body: a JSON object merged into every request body (not the fields the benchmark sets)."""
    if not text:
        return {}
    import json

    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ConfigError(f"--extra-body must be a JSON object like '{{\"return_token_ids\": true}}', not {text!r}.")
    taken = [k for k in value if k in RESERVED_BODY_FIELDS]
    if taken:
        raise ConfigError(f"--extra-body cannot set {', '.join(taken)}: the benchmark sets "
                          f"{', '.join(RESERVED_BODY_FIELDS)} itself (use --output-tokens, --api, --model).")
    return value

