"""A workload as the fleet planner reads it: arrivals, lengths, SLOs, the day's shape, acceptable models.

    load_workload("examples/chat-40rps.toml") -> Workload
    Workload(rate=40, prompt_tokens=3000, output_tokens=400, slo=["ttft_p95_ms=1000"], models=["gemma-4-12b"])

Lengths are fixed (``prompt_tokens = 3000``) or percentiles (``prompt_tokens = {p50 = 1200, p95 = 3000}``).
Percentiles are sampled by one documented rule and nothing else (docs/planner.md, "Workloads"): the
inverse CDF interpolated linearly between the given points, clamped at the ends (below the lowest given
percentile every length equals it, above the highest likewise): no tail and no shape parameter is invented.
``n`` requests take the quantiles at (i + 0.5) / n, shuffled with a fixed seed, so a sample is exact and
reproducible.

Arrivals: ``rate`` (requests/s at the peak), or ``users`` with ``think_time_s``, read as the open-loop rate
users / think_time (an upper bound: each user also waits for its answer). The traffic shape says how the
rate moves over a day (``peak_hours`` at the peak, ``off_peak`` x peak the rest, or 24 ``hourly`` fractions).
"""

from __future__ import annotations

import math
import random
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from inferctl.bench.stats import Slo, parse_slo
from inferctl.errors import ConfigError

_PCT = re.compile(r"^p(\d{1,2}(?:\.\d+)?|100)$")

TokenCount = Annotated[int, Field(ge=1, le=2_000_000)]


class Lengths(BaseModel):
    """A token-length distribution: one fixed value, or values at given percentiles."""

    fixed: TokenCount | None = Field(default=None, description="Every request has this many tokens.")
    percentiles: dict[str, TokenCount] = Field(
        default_factory=dict, description="Tokens at percentiles, e.g. {p50: 1200, p95: 3000} (keys p0..p100)."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_short(cls, v: object) -> object:
        if isinstance(v, bool):
            raise ValueError("a token length is a number or a table of percentiles")
        if isinstance(v, int):
            return {"fixed": v}
        if isinstance(v, dict) and "fixed" not in v and "percentiles" not in v:
            return {"percentiles": v}
        return v

    @model_validator(mode="after")
    def _check(self) -> Lengths:
        if (self.fixed is None) == (not self.percentiles):
            raise ValueError("give a fixed length or percentiles (p50 = ..., p95 = ...), not both or neither")
        pts = self.points()
        if any(b[1] < a[1] for a, b in zip(pts, pts[1:], strict=False)):
            raise ValueError("lengths at higher percentiles cannot be shorter than at lower ones")
        return self

    def points(self) -> list[tuple[float, int]]:
        """(percentile 0..100, tokens), sorted."""
        if self.fixed is not None:
            return [(50.0, self.fixed)]
        out = []
        for key, value in self.percentiles.items():
            m = _PCT.match(key.strip().lower())
            if not m or float(m.group(1)) > 100:
                raise ValueError(f"'{key}' is not a percentile; write p50, p95, p99.9 or p100")
            out.append((float(m.group(1)), value))
        return sorted(out)

    def quantile(self, u: float) -> int:
        """Tokens at quantile ``u`` (0..1): linear between the given percentiles, clamped at both ends."""
        pts = self.points()
        q = u * 100.0
        if q <= pts[0][0]:
            return pts[0][1]
        if q >= pts[-1][0]:
            return pts[-1][1]
        for (p0, v0), (p1, v1) in zip(pts, pts[1:], strict=False):
            if p0 <= q <= p1:
                return int(round(v0 + (v1 - v0) * (q - p0) / (p1 - p0))) if p1 > p0 else v1
        return pts[-1][1]  # pragma: no cover - the loop covers [p0, pk]

    def sample(self, n: int, seed: int = 0) -> list[int]:
        """``n`` lengths: the quantiles at (i + 0.5) / n, in a seeded random order."""
        values = [self.quantile((i + 0.5) / n) for i in range(n)]
        random.Random(seed).shuffle(values)
        return values

    @property
    def max(self) -> int:
        return self.points()[-1][1]

    def describe(self) -> str:
        if self.fixed is not None:
            return f"{self.fixed:,}"
        return ", ".join(f"p{p:g} {v:,}" for p, v in self.points())


class Traffic(BaseModel):
    """How the arrival rate moves over a day, as fractions of the peak."""

    peak_hours: float | None = Field(default=None, ge=0, le=24, description="Hours a day at the peak rate.")
    off_peak: float = Field(default=0.0, ge=0, le=1, description="Rate outside peak hours, as a fraction of peak.")
    hourly: list[Annotated[float, Field(ge=0, le=1)]] | None = Field(
        default=None, min_length=24, max_length=24, description="24 fractions of the peak rate, hour by hour."
    )

    def fractions(self) -> list[float]:
        """24 hourly fractions of the peak (all 1.0 when no shape is given: always at peak)."""
        if self.hourly is not None:
            return list(self.hourly)
        if self.peak_hours is None:
            return [1.0] * 24
        whole = int(self.peak_hours)
        part = self.peak_hours - whole
        out = [1.0] * whole + ([part * 1.0 + (1 - part) * self.off_peak] if part else [])
        return out + [self.off_peak] * (24 - len(out))

    def describe(self) -> str:
        if self.hourly is not None:
            return "hourly shape given"
        if self.peak_hours is None:
            return "flat (always at peak)"
        return f"{self.peak_hours:g} h/day at peak, {self.off_peak:.0%} of peak otherwise"


ModelChoice = Annotated[str, Field(min_length=1, max_length=120, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(:[a-z0-9]+)?$",
                                   description="Catalog model, optionally ':format' (gemma-4-12b:w4a16).")]


class Search(BaseModel):
    """What the fleet search may vary (defaults: everything the catalogs hold)."""

    accelerators: list[str] | None = Field(default=None, description="Accelerator names (default: every priced one).")
    platforms: list[Literal["cloudrun", "gce", "tpu"]] | None = Field(default=None, description="Default: all.")
    tiers: list[Literal["on-demand", "spot", "committed-1y", "committed-3y"]] | None = Field(
        default=None, description="Price tiers (default: all).")
    kv_dtypes: list[Literal["auto", "fp8"]] = Field(default=["auto", "fp8"], min_length=1)
    speculative: list[Literal["off", "mtp"]] = Field(default=["off", "mtp"], min_length=1)
    max_devices: int = Field(default=8, ge=1, le=64, description="Largest tensor-parallel group per replica.")
    max_model_len: int | None = Field(default=None, ge=16, description="Default: longest prompt + output, "
                                      "rounded up to 1,024.")
    keep: int = Field(default=10, ge=1, le=200, description="Candidates ranked exactly (the rest may be pruned).")


class Workload(BaseModel):
    """A workload: peak arrivals, lengths, SLOs, the day's shape and the acceptable models."""

    name: str = Field(default="workload", max_length=80)
    rate: float | None = Field(default=None, gt=0, le=1e6, description="Peak arrival rate, requests/s.")
    users: int | None = Field(default=None, ge=1, le=10_000_000, description="Concurrent users (with think_time_s).")
    think_time_s: float | None = Field(default=None, gt=0, le=86_400, description="A user's pause between requests.")
    prompt_tokens: Lengths = Field(description="Prompt length: a number or percentiles.")
    output_tokens: Lengths = Field(description="Output length: a number or percentiles.")
    slo: list[str] = Field(default_factory=list, max_length=8, description="e.g. ttft_p95_ms=1000, tpot_p95_ms=50.")
    max_error_rate: float = Field(default=0.0, ge=0, le=1, description="Fraction of requests allowed to fail.")
    models: list[ModelChoice] = Field(min_length=1, max_length=8, description="Acceptable models.")
    traffic: Traffic = Field(default_factory=Traffic)
    search: Search = Field(default_factory=Search)

    @field_validator("slo")
    @classmethod
    def _slos(cls, v: list[str]) -> list[str]:
        for s in v:
            try:
                parse_slo(s)
            except ConfigError as exc:
                raise ValueError(str(exc).replace("--slo ", "slo ")) from None
        return v

    @model_validator(mode="after")
    def _arrivals(self) -> Workload:
        if self.rate is None and (self.users is None or self.think_time_s is None):
            raise ValueError("give the peak rate (requests/s), or users with think_time_s")
        if self.rate is not None and self.users is not None:
            raise ValueError("give rate or users, not both")
        return self

    @property
    def slos(self) -> list[Slo]:
        return [parse_slo(s) for s in self.slo]

    @property
    def peak_rate(self) -> float:
        """Requests/s at the peak (users / think_time when given as users)."""
        if self.rate is not None:
            return self.rate
        return self.users / self.think_time_s  # type: ignore[operator]

    def model_choices(self) -> list[tuple[str, str | None]]:
        """(model, format or None for any)."""
        return [(m.split(":", 1)[0], m.split(":", 1)[1] if ":" in m else None) for m in self.models]

    @property
    def max_model_len(self) -> int:
        if self.search.max_model_len:
            return self.search.max_model_len
        return int(math.ceil((self.prompt_tokens.max + self.output_tokens.max) / 1024) * 1024)

    def describe(self) -> str:
        arr = f"{self.rate:g} req/s" if self.rate is not None else \
            f"{self.users:,} users, {self.think_time_s:g} s think time (= {self.peak_rate:.3g} req/s)"
        slos = ", ".join(self.slo) or "no latency SLO"
        return (f"{arr} at peak; prompts {self.prompt_tokens.describe()} tokens, answers "
                f"{self.output_tokens.describe()} tokens; {slos}; models {', '.join(self.models)}")


def _first_error(exc: ValidationError, where: str) -> ConfigError:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"] if not str(p).startswith(("function-", "int", "dict")))
    msg = first["msg"].removeprefix("Value error, ")
    return ConfigError(f"Workload {where} is invalid at '{loc or 'top level'}': {msg}.")


def workload_from_dict(data: dict, where: str = "") -> Workload:
    """A Workload from a mapping (the TOML's tables, or flags); invalid input is one ConfigError sentence."""
    try:
        return Workload.model_validate(data)
    except ValidationError as exc:
        raise _first_error(exc, where or "") from None


def load_workload(path: str | Path) -> Workload:
    """Read a workload TOML file (docs/planner.md, "Workloads")."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"Workload file {p} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read workload file {p}: {exc}.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Workload file {p} is not valid TOML: {exc}.") from None
    data.setdefault("name", p.stem)
    return workload_from_dict(data, f"file {p}")
