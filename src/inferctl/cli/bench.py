"""`inferctl bench sweep|run`: parse flags, call ops.bench, show progress and the result."""

from __future__ import annotations

from typing import Annotated

import typer

from inferctl import params as P
from inferctl.cli.common import JsonOpt, ModelOpt, TargetOpt, TokenEnvOpt, UrlOpt, console, emit, fail, run
from inferctl.cli.options import option

app = typer.Typer(help="Benchmark a server: a sweep over concurrency × context, or one cell.",
                  no_args_is_help=True)

RunsDirOpt = Annotated[str | None, typer.Option("--runs-dir", help="Where run directories go "
                                                "(default: $INFERCTL_RUNS_DIR or the data dir's runs/).")]
RequestsOpt = option(P.REQUESTS_PER_CELL)
DurationOpt = Annotated[float | None, typer.Option("--duration", min=0, help="Minimum seconds per cell (with "
                                                   "--requests: both minimums).")]
WarmupOpt = Annotated[int | None, typer.Option("--warmup", min=0, help="Warm-up requests per cell, not measured "
                                               "(default: one wave, at most 256).")]
OutputOpt = Annotated[int | None, typer.Option("--output-tokens", min=1, help="max_tokens of every request.")]
NaturalOpt = Annotated[bool, typer.Option("--natural-stop", help="Let the model stop at EOS (default: "
                                          "ignore_eos, exactly --output-tokens).")]
ApiOpt = option(P.API)
SloOpt = option(P.SLOS)
BurstOpt = Annotated[float, typer.Option("--burstiness", help="Open loop: gamma shape (1 = Poisson, <1 burstier).")]
MaxConcOpt = Annotated[int | None, typer.Option("--max-concurrency", min=1,
                                                help="Open loop: cap on requests in flight.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed for prompts and arrivals.")]
PrefixOpt = Annotated[int, typer.Option("--shared-prefix", min=0, help="Tokens shared by every prompt (prefix cache).")]
ThresholdOpt = Annotated[float, typer.Option("--error-threshold", min=0, max=1, help="A row stops after a cell with a "
                                             "higher error rate (0..1).")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0, help="Per-request timeout in seconds (stalls count).")]
WorkersOpt = Annotated[str, typer.Option("--workers", help="Load-generator processes: N, or auto (one per ~128 "
                                          "streams or ~150 req/s, at most one per idle core; more after a client-bound "
                                          "cell).")]
TransportOpt = Annotated[str, typer.Option("--transport", help="auto (= raw), raw, aiohttp or httpx.", hidden=True)]
ExtraBodyOpt = Annotated[str | None, typer.Option("--extra-body", help="JSON object added to every request body, "
                                                 "e.g. '{\"return_token_ids\": true}' to time tokens that "
                                                 "decode to no text.")]
TokenizerOpt = Annotated[str | None, typer.Option("--tokenizer", help="Directory with the model's tokenizer files, "
                                                  "for exact prompt lengths on servers without /tokenize.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress; print the run directory at the end.")]


def _go(target, url, model, token_env, spec_fn, runs_dir, resume, quiet, as_json) -> None:
    from inferctl.cli import bench_render
    from inferctl.ops import bench as ops

    t = None
    if not resume or target or url:
        from inferctl.ops.targets import resolve_target  # not at import: `inferctl --help` stays light

        t = run(lambda: resolve_target(target, url, model=model, token_env=token_env))
    spec = None if resume else run(spec_fn)
    reporter = None if (quiet or as_json) else bench_render.ProgressReporter(console())
    try:
        summary = run(lambda: ops.sweep(t, spec, root=runs_dir, resume=resume, reporter=reporter,
                                        command=ops.argv()))
    finally:
        if reporter is not None:
            reporter.close()
    if quiet and not as_json:
        typer.echo(summary.path)
    else:
        emit(summary, as_json, bench_render.summary)
    if summary.status == "failed":  # the results are shown and kept, but nothing was measured: exit non-zero
        raise fail(f"Run {summary.run_id} failed: {summary.reason}.")


@app.command("sweep")
def sweep(
    target: TargetOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    token_env: TokenEnvOpt = None,
    preset: Annotated[str | None, typer.Option("--preset", help="seed-grid or quick.")] = None,
    concurrency: Annotated[
        str | None, typer.Option("--concurrency", "-c", help="Closed loop: 1,2,4 or 1..2048.")
    ] = None,
    context: Annotated[str | None, typer.Option("--context", help="Prompt lengths in tokens: 128,1024.")] = None,
    rate: Annotated[str | None, typer.Option("--rate", help="Open loop instead: requests/s per cell, 1,5,10.")] = None,
    max_concurrency: MaxConcOpt = None,
    burstiness: BurstOpt = 1.0,
    output_tokens: option(P.OUTPUT_TOKENS) = P.OUTPUT_TOKENS.default,
    natural_stop: NaturalOpt = False,
    api: ApiOpt = P.API.default,
    requests_per_cell: RequestsOpt = P.REQUESTS_PER_CELL.default,
    duration: DurationOpt = None,
    warmup: WarmupOpt = None,
    seed: SeedOpt = 0,
    shared_prefix: PrefixOpt = 0,
    slos: SloOpt = P.SLOS.default,
    error_threshold: ThresholdOpt = 0.5,
    timeout: TimeoutOpt = 600.0,
    workers: WorkersOpt = "auto",
    transport: TransportOpt = "auto",
    extra_body: ExtraBodyOpt = None,
    tokenizer: TokenizerOpt = None,
    runs_dir: RunsDirOpt = None,
    resume: option(P.RESUME) = P.RESUME.default,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Sweep concurrency (or rate) × context; results go to a run directory as they arrive."""

    def spec_fn():
        from inferctl.bench.spec import spec_from_flags

        return spec_from_flags(preset=preset, concurrency=concurrency, context=context, rate=rate,
                               max_concurrency=max_concurrency, burstiness=burstiness, output_tokens=output_tokens,
                               natural_stop=natural_stop, api=api, requests=requests_per_cell, duration=duration,
                               warmup=warmup, seed=seed, shared_prefix=shared_prefix, slo=slos,
                               error_threshold=error_threshold, timeout=timeout, workers=workers,
                               transport=transport, extra_body=extra_body,
                               tokenizer=tokenizer)

    _go(target, url, model, token_env, spec_fn, runs_dir, resume, quiet, as_json)


@app.command("run")
def run_one(
    target: TargetOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    token_env: TokenEnvOpt = None,
    context: Annotated[int, typer.Option("--context", min=1, help="Prompt length in tokens.")] = 1024,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c", min=1,
                                                    help="Closed loop concurrency.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Open loop requests/s instead.")] = None,
    max_concurrency: MaxConcOpt = None,
    burstiness: BurstOpt = 1.0,
    output_tokens: OutputOpt = 128,
    natural_stop: NaturalOpt = False,
    api: ApiOpt = P.API.default,
    requests_per_cell: RequestsOpt = P.REQUESTS_PER_CELL.default,
    duration: DurationOpt = None,
    warmup: WarmupOpt = None,
    seed: SeedOpt = 0,
    shared_prefix: PrefixOpt = 0,
    slos: SloOpt = P.SLOS.default,
    timeout: TimeoutOpt = 600.0,
    workers: WorkersOpt = "auto",
    transport: TransportOpt = "auto",
    extra_body: ExtraBodyOpt = None,
    tokenizer: TokenizerOpt = None,
    runs_dir: RunsDirOpt = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Measure a single cell (one context, one concurrency or rate); it is a one-cell run directory."""
    conc = None if rate is not None and concurrency is None else str(concurrency or 1)

    def spec_fn():
        from inferctl.bench.spec import spec_from_flags

        return spec_from_flags(preset=None, concurrency=conc, context=str(context),
                               rate=None if rate is None else str(rate), max_concurrency=max_concurrency,
                               burstiness=burstiness, output_tokens=output_tokens, natural_stop=natural_stop, api=api,
                               requests=requests_per_cell, duration=duration, warmup=warmup, seed=seed,
                               shared_prefix=shared_prefix, slo=slos, error_threshold=1.0, timeout=timeout,
                               workers=workers, transport=transport, extra_body=extra_body,
                               tokenizer=tokenizer)

    _go(target, url, model, token_env, spec_fn, runs_dir, None, quiet, as_json)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="bench")

