"""What a sweep is asked to do: the grid, the load, the workload, and the named presets.

A sweep is rows of cells: one row per context length, cells ordered by concurrency (or rate) so a
row can stop early once the server saturates. ``SweepSpec`` is stored in meta.json as ``grid`` and
is all ``--resume`` needs to rebuild the same cells.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from inferctl.bench.stats import Slo
from inferctl.errors import ConfigError

POWERS_OF_TWO_TO_2048 = [2**i for i in range(12)]
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
    """'1,2,4' -> [1, 2, 4]; '1..64' -> powers of two from 1 to 64."""
    text = text.strip()
    try:
        if ".." in text:
            lo, hi = (int(x) for x in text.split("..", 1))
            out, v = [], lo
            while v <= hi:
                out.append(v)
                v *= 2
            return out
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"Bad {flag} {text!r}; use a comma list like 1,2,4 or a doubling range like 1..64.") from None


def parse_float_list(text: str, flag: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"Bad {flag} {text!r}; use a comma list like 0.5,1,2.") from None
