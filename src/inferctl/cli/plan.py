"""`inferctl plan | simulate | calibrate` and `inferctl sim serve`: parse flags, call ops, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inferctl import params as P
from inferctl.cli.common import JsonOpt, console, emit, fail, run, styled
from inferctl.cli.options import argument, option

ModelArg = argument(P.MODEL)
AccOpt = option(P.ACCELERATOR)
CountOpt = option(P.COUNT)
TpOpt = Annotated[int | None, typer.Option("--tp", help="Tensor-parallel size (default: --count).", min=1)]
QuantOpt = option(P.QUANT)
KvOpt = option(P.KV_DTYPE)
LenOpt = option(P.MAX_MODEL_LEN)
UtilOpt = Annotated[float, typer.Option("--gpu-mem-util", help="--gpu-memory-utilization.")]
SeqsOpt = Annotated[int | None, typer.Option("--max-num-seqs", help="Default: vLLM's for the device.")]
BatchOpt = Annotated[int | None, typer.Option("--max-num-batched-tokens", help="Default: vLLM's for the device.")]
BlockOpt = Annotated[int | None, typer.Option("--block-size", help="KV block size (default 16; CPU 128).")]
KvGibOpt = Annotated[float | None, typer.Option("--kv-cache-gib", help="KV memory per device, GiB "
                                                "(--kv-cache-memory-bytes; the CPU engine's KV space).")]
SpecOpt = option(P.SPECULATIVE)
PriceOpt = option(P.PRICE_PER_HOUR)
TextOpt = Annotated[bool, typer.Option("--text-only", help="Do not count vision/audio encoder weights.")]
ProfileOpt = option(P.PROFILE)
CalOpt = Annotated[Path | None, typer.Option("--calibration", help="Fitted performance parameters "
                                             "(a file written by `inferctl calibrate`).")]


def _config(model, profile, accelerator, count, tp, quant, kv_dtype, max_model_len, gpu_mem_util, max_num_seqs,
            max_num_batched_tokens, block_size, kv_cache_gib, speculative, price, text_only):
    from inferctl.plan.config import build_config

    def build():
        return build_config(
            model=model, profile=profile, speculative=speculative, price_per_device_hour=price,
            accelerator=accelerator, count=count, tp=tp, quant=quant, kv_dtype=kv_dtype, max_model_len=max_model_len,
            gpu_mem_util=gpu_mem_util, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
            block_size=block_size, kv_cache_memory_gib=kv_cache_gib, language_model_only=text_only,
        )  # fmt: skip

    return run(build)


def _params(path: Path | None):
    """(PerfParams, SpeedSource) from a calibration file, or (None, None): the accelerator catalog's."""
    if path is None:
        return None, None
    from inferctl.plan.calibrate import load_calibration

    return run(lambda: load_calibration(path))


def plan(
    model: ModelArg = None,
    accelerator: AccOpt = "l4",
    count: CountOpt = 1,
    tp: TpOpt = None,
    quant: QuantOpt = "bf16",
    kv_dtype: KvOpt = "auto",
    max_model_len: LenOpt = None,
    gpu_mem_util: UtilOpt = 0.92,
    max_num_seqs: SeqsOpt = None,
    max_num_batched_tokens: BatchOpt = None,
    block_size: BlockOpt = None,
    kv_cache_gib: KvGibOpt = None,
    speculative: SpecOpt = None,
    price_per_hour: PriceOpt = None,
    text_only: TextOpt = False,
    profile: ProfileOpt = None,
    calibration: CalOpt = None,
    context: option(P.PLAN_CONTEXT) = P.PLAN_CONTEXT.default,
    output_tokens: option(P.PLAN_OUTPUT_TOKENS) = P.PLAN_OUTPUT_TOKENS.default,
    workload: Annotated[Path | None, typer.Option("--workload", help="A workload TOML file (docs/planner.md, "
                                                  "'Workloads'): search the catalog for the cheapest deployments "
                                                  "that meet it.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Workload search from flags: peak requests/s (prompt "
                                               "--context, answer --output-tokens tokens).", min=0.0001)] = None,
    slo: Annotated[list[str] | None, typer.Option("--slo", help="Workload SLO, e.g. ttft_p95_ms=1000 "
                                                  "(repeatable).")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Workload search: also write an HTML report with "
                                              "the cost-vs-capacity chart.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Will it fit: memory per device, KV cache and concurrency the way vLLM sizes them, speed and cost.

    With --workload FILE (or --rate): the cheapest deployments across the catalog that meet the workload.
    """
    from inferctl.cli import plan_render
    from inferctl.ops.plan import plan as plan_op

    if workload is not None or rate is not None:
        from inferctl.ops.fleet import build_workload, plan_fleet

        flags_model = f"{model}:{quant}" if model and quant != "bf16" else model
        wl = run(lambda: build_workload(workload, model=flags_model, rate=rate, slo=slo,
                                        prompt_tokens=context if rate is not None else None,
                                        output_tokens=output_tokens if rate is not None else None))  # fmt: skip
        result = run(lambda: plan_fleet(wl, html=html))
        emit(result, as_json, plan_render.fleet)
        if not result.rows:
            raise typer.Exit(1)
        return

    cfg = _config(model, profile, accelerator, count, tp, quant, kv_dtype, max_model_len, gpu_mem_util,
                  max_num_seqs, max_num_batched_tokens, block_size, kv_cache_gib, speculative, price_per_hour,
                  text_only)
    params, source = _params(calibration)
    report = run(lambda: plan_op(cfg, context=context, output_tokens=output_tokens, params=params,
                                 params_source=source, profile=profile))  # fmt: skip
    emit(report, as_json, plan_render.plan)
    if not report.fits:
        raise typer.Exit(1)


def simulate(
    model: ModelArg = None,
    accelerator: AccOpt = "l4",
    count: CountOpt = 1,
    tp: TpOpt = None,
    quant: QuantOpt = "bf16",
    kv_dtype: KvOpt = "auto",
    max_model_len: LenOpt = None,
    gpu_mem_util: UtilOpt = 0.92,
    max_num_seqs: SeqsOpt = None,
    max_num_batched_tokens: BatchOpt = None,
    block_size: BlockOpt = None,
    kv_cache_gib: KvGibOpt = None,
    speculative: SpecOpt = None,
    price_per_hour: PriceOpt = None,
    text_only: TextOpt = False,
    profile: ProfileOpt = None,
    calibration: CalOpt = None,
    preset: Annotated[str | None, typer.Option("--preset", help="seed-grid or quick.")] = None,
    concurrency: Annotated[str | None, typer.Option("--concurrency", "-c", help="1,2,4 or 1..2048.")] = None,
    context: Annotated[str | None, typer.Option("--context", help="Prompt lengths in tokens: 128,1024.")] = None,
    rate: Annotated[str | None, typer.Option("--rate", help="Open loop instead: requests/s per cell.")] = None,
    output_tokens: option(P.OUTPUT_TOKENS) = P.OUTPUT_TOKENS.default,
    requests_per_cell: option(P.REQUESTS_PER_CELL) = P.REQUESTS_PER_CELL.default,
    warmup: Annotated[int | None, typer.Option("--warmup", min=0, help="Warm-up requests per cell.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for open-loop arrivals.")] = 0,
    slos: option(P.SLOS) = P.SLOS.default,
    runs_dir: Annotated[str | None, typer.Option("--runs-dir", help="Where run directories go.")] = None,
    requests_log: Annotated[bool, typer.Option("--requests-log", help="Also write requests.jsonl.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the run directory.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Simulate a sweep grid (same grid flags as `bench sweep`) into a run directory marked source: simulated."""
    from inferctl.bench.spec import spec_from_flags
    from inferctl.cli import plan_render
    from inferctl.ops.bench import argv
    from inferctl.ops.simulate import simulate as simulate_op

    cfg = _config(model, profile, accelerator, count, tp, quant, kv_dtype, max_model_len, gpu_mem_util,
                  max_num_seqs, max_num_batched_tokens, block_size, kv_cache_gib, speculative, price_per_hour,
                  text_only)
    spec = run(lambda: spec_from_flags(preset=preset, concurrency=concurrency, context=context, rate=rate,
                                       output_tokens=output_tokens, requests=requests_per_cell, warmup=warmup,
                                       seed=seed, slo=slos, workers=1))  # fmt: skip
    params, source = _params(calibration)
    summary = run(lambda: simulate_op(cfg, spec, params=params, params_source=source, root=runs_dir,
                                      write_requests=requests_log,
                                      command=argv(), profile=profile))  # fmt: skip
    if quiet and not as_json:
        typer.echo(summary.path)
        return
    emit(summary, as_json, plan_render.simulated)


def calibrate(
    run_refs: Annotated[list[str] | None, typer.Argument(help="Measured runs (path, id, id prefix or 'latest'), "
                                                         "fitted jointly; runs of two model sizes also fit how "
                                                         "efficiency grows with matrix size.",
                                                         show_default=False)] = None,
    corpus: Annotated[bool, typer.Option("--corpus", help="Fit each accelerator on the public measurement corpus "
                                         "instead of a run (all accelerators, or the one --accelerator names).")
                      ] = False,
    model: Annotated[str | None, typer.Option("--model", "-m", help="The model that was measured (catalog name "
                                              "or config.json directory; default: the run's model; one run "
                                              "only).")] = None,
    accelerator: Annotated[str | None, typer.Option("--accelerator", "-a", help="The measured hardware (default "
                                                    "cpu); with --corpus the one accelerator to fit (default "
                                                    "all).")] = None,
    count: CountOpt = 1,
    tp: TpOpt = None,
    quant: QuantOpt = "bf16",
    max_model_len: LenOpt = None,
    max_num_seqs: SeqsOpt = None,
    max_num_batched_tokens: BatchOpt = None,
    block_size: BlockOpt = None,
    kv_cache_gib: KvGibOpt = None,
    speculative: SpecOpt = None,
    profile: ProfileOpt = None,
    out: Annotated[Path | None, typer.Option("--out", help="Where to write the fitted parameters (JSON; default "
                                             "<run>/calibration.json; with --corpus a directory, one "
                                             "<accelerator>.json each, none written by default).")] = None,
    runs_dir: Annotated[str | None, typer.Option("--runs-dir", help="Where runs live.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Fit the hardware profile's efficiency factors and overheads to measured runs (or, with --corpus, each
    accelerator to the public measurement corpus); per-cell error and MAPE."""
    from inferctl.cli import plan_render
    from inferctl.ops.calibrate import calibrate_corpus, calibrate_runs

    if corpus:
        if run_refs:
            raise fail("Pass measured runs or --corpus, not both.")
        emit(run(lambda: calibrate_corpus(accelerator, out=out)), as_json, plan_render.corpus_calibration)
        return
    if not run_refs:
        raise fail("Name at least one measured run, or pass --corpus.")
    params = {"model": model, "accelerator": accelerator or "cpu", "count": count, "tp": tp, "quant": quant,
              "max_model_len": max_model_len, "max_num_seqs": max_num_seqs,
              "max_num_batched_tokens": max_num_batched_tokens, "block_size": block_size,
              "kv_cache_gib": kv_cache_gib, "speculative": speculative, "profile": profile}  # fmt: skip
    report = run(lambda: calibrate_runs(run_refs, root=runs_dir, out=out, **params))
    emit(report, as_json, plan_render.calibration)


sim_app = typer.Typer(help="A vLLM-compatible server whose timings come from the simulator.", no_args_is_help=True)


@sim_app.command("serve")
def sim_serve(
    model: ModelArg = None,
    accelerator: AccOpt = "l4",
    count: CountOpt = 1,
    tp: TpOpt = None,
    quant: QuantOpt = "bf16",
    kv_dtype: KvOpt = "auto",
    max_model_len: LenOpt = None,
    gpu_mem_util: UtilOpt = 0.92,
    max_num_seqs: SeqsOpt = None,
    max_num_batched_tokens: BatchOpt = None,
    kv_cache_gib: KvGibOpt = None,
    speculative: SpecOpt = None,
    profile: ProfileOpt = None,
    calibration: CalOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8100,
    speed: Annotated[float, typer.Option("--speed", help="Run the clock this many times faster than real.")] = 1.0,
    served_name: Annotated[str | None, typer.Option("--served-model-name", help="Name in /v1/models.")] = None,
) -> None:
    """Serve the OpenAI/vLLM API with simulated timings: '12B on an L4 at 256 users' on a laptop."""
    from inferctl.sim.server import serve

    cfg = _config(model, profile, accelerator, count, tp, quant, kv_dtype, max_model_len, gpu_mem_util,
                  max_num_seqs, max_num_batched_tokens, None, kv_cache_gib, speculative, None, False)
    params, _ = _params(calibration)
    from inferctl.ops.plan import check_fits

    run(lambda: check_fits(cfg))
    console().print(styled("[bold]sim serve[/] {} on {} x {} at http://{}:{}", cfg.model, cfg.count, cfg.accelerator,
                           host, port))
    run(lambda: serve(cfg, params=params, host=host, port=port, speed=speed, served_model_name=served_name))


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
    app.command("simulate")(simulate)
    app.command("calibrate")(calibrate)
    app.add_typer(sim_app, name="sim")
