"""How fast and how accurate is inferctl's load generator? Measured against a peer in the same run.

1. Throughput: against tests/fakes/fast_fake.py returning every token instantly, the request rate
   inferctl's engine sustains vs `vllm bench serve`, same concurrency, prompt and output length,
   same completions endpoint. Alternating runs; the median of each is reported with the ratio.
   The fake's own CPU (GET /cpu) is reported per run, to show whether it was the bottleneck.
2. TTFT accuracy: the fake delays the first token by a known amount (default 50 ms after the
   request arrived), then one token every ITL (default 20 ms), 32 output tokens, and records its
   own truth per request (first-token send call − kernel receive stamp of the request, GET /truth,
   in arrival order; the first wave is the warm-up and is dropped). inferctl's p50 TTFT at
   concurrency 256 vs that truth, alternating with `vllm bench serve` for reference.

    .venv/bin/python benchmarks/client_overhead.py [--concurrency 64,512] [--requests 3000] [--repeats 3] \
        [--workers 1,auto] [--ttft-ms 50 --itl-ms 20 --ttft-output-tokens 32 --ttft-concurrency 256] \
        [--peers guidellm,aiperf] [--out FILE]

Peers: `vllm bench serve` (from the project's environment) and, with --peers, GuideLLM and AIPerf, each
installed on first use into its own throwaway venv by benchmarks/peers.py (never into the project's
dependencies), same fake, prompts' length, outputs, concurrency and warm-up, runs alternating. Every run
also reports the client's CPU (user + system of the client command and everything it started, start-up
included) per request sent.

With PIN=1, server and clients are pinned to different cores (taskset); off by default because on a
shared machine pinning also pins the neighbours' load onto one core. With NICE=-10 the fake and both
clients run at a higher scheduling priority than other jobs on a shared host (both peers alike).
Prints a JSON summary; docs/performance.md records the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - benchmarks/peers.py, beside this script

TWO_CORES = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None and bool(os.environ.get("PIN"))


NICE = os.environ.get("NICE")  # e.g. NICE=-10: fake and both clients at a higher priority than neighbours


def pin(core: int, cmd: list[str]) -> list[str]:
    cmd = ["taskset", "-c", str(core), *cmd] if TWO_CORES else cmd
    return ["nice", "-n", NICE, *cmd] if NICE else cmd


def start_fake(ttft_ms: float, itl_ms: float = 0.0) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(pin(0, [PY, "-m", "tests.fakes.fast_fake", "--ttft-ms", str(ttft_ms), "--itl-ms",
                                    str(itl_ms)]), cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("READY"), line
    return proc, line.split()[1]


def truth(url: str, method: str = "GET") -> list[float]:
    req = urllib.request.Request(url + "/truth", method=method)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def fake_cpu(url: str) -> float:
    with urllib.request.urlopen(url + "/cpu") as r:
        return json.loads(r.read())["cpu_seconds"]


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measured(fn):
    """Run fn(url, conc, n, warmup, ...), adding the fake's CPU share (fake CPU seconds / wall seconds of the
    run) and the client's CPU per request sent (its command and every process it waited for)."""

    def wrapper(url: str, *args, **kwargs) -> dict:
        c0, t0, k0 = fake_cpu(url), time.perf_counter(), _children_cpu()
        out = fn(url, *args, **kwargs)
        k1 = _children_cpu()
        out["fake_cpu"] = round((fake_cpu(url) - c0) / (time.perf_counter() - t0), 3)
        sent = args[1] + args[2]  # measured + warm-up requests
        out["client_cpu_s"] = round(k1 - k0, 2)
        out["client_cpu_ms_per_req"] = round((k1 - k0) / sent * 1000, 4)
        return out

    return wrapper


run_guidellm = measured(peers.run_guidellm)
run_aiperf = measured(peers.run_aiperf)
PEER_RUNNERS = {"guidellm": run_guidellm, "aiperf": run_aiperf}


@measured
def run_inferctl(url: str, conc: int, n: int, warmup: int, ctx: int, out: int, tmp: str, workers: str = "1") -> dict:
    cmd = pin(1, [str(Path(PY).parent / "inferctl"), "bench", "run", "--url", url, "--context", str(ctx),
                  "--concurrency", str(conc), "--output-tokens", str(out), "--requests", str(n), "--warmup",
                  str(warmup), "--api", "completions", "--runs-dir", tmp, "--workers", workers, "--json"])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"inferctl bench run failed ({res.returncode}):\n{res.stderr[-3000:]}")
    data = json.loads(res.stdout)
    cell = data["cells"][0]
    m = cell["metrics"]
    failed: dict[str, int] = {}
    if m["errors"]:  # say which, from the run's records
        for line in (Path(data["path"]) / "requests.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec.get("status") not in ("ok", None):
                key = f'{rec["status"]}: {rec.get("error", "")}'[:200]
                failed[key] = failed.get(key, 0) + 1
    return {"workers": cell["client"]["workers"], "req_per_s": m["request_throughput"], "ok": m["ok"],
            **({"failed": failed} if failed else {}),
            "ttft_p50_ms": m["ttft"]["p50"], "client_bound": cell["client"]["client_bound"],
            "cpu": cell["client"]["cpu_fraction"], "loop_lag_p50_ms": cell["client"]["loop_lag"]["p50"]}


@measured
def run_vllm(url: str, conc: int, n: int, warmup: int, ctx: int, out: int, tmp: str, tokenizer: str) -> dict:
    name = f"vllm-{time.time_ns()}.json"
    cmd = pin(1, [PY, str(ROOT / "benchmarks" / "vllm_bench_serve.py"), "--backend", "openai", "--base-url", url,
                  "--model", "fake-model", "--tokenizer", tokenizer, "--dataset-name", "random",
                  "--random-input-len", str(ctx), "--random-output-len", str(out), "--num-prompts", str(n),
                  "--max-concurrency", str(conc), "--num-warmups", str(warmup), "--ignore-eos",
                  "--disable-tqdm", "--save-result", "--result-dir", tmp, "--result-filename", name,
                  "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99"])
    subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=tmp)
    data = json.loads((Path(tmp) / name).read_text())
    return {"req_per_s": data["request_throughput"], "ok": data["completed"],
            "ttft_p50_ms": data.get("median_ttft_ms")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", default="64", help="one or more, e.g. 64,512")
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--output-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", default="1", help="inferctl --workers values to compare, e.g. 1,auto")
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--ttft-output-tokens", type=int, default=32)
    ap.add_argument("--ttft-concurrency", type=int, default=256)
    ap.add_argument("--ttft-workers", default="1,auto")
    ap.add_argument("--ttft-repeats", type=int, default=3)
    ap.add_argument("--skip-vllm", action="store_true")
    ap.add_argument("--peers", default="", help="also run these peers (each in its own venv): guidellm,aiperf")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-ttft", action="store_true")
    ap.add_argument("--out", help="also write the JSON summary to this file (e.g. benchmarks/results/...)")
    args = ap.parse_args()
    peer_names = [p for p in args.peers.split(",") if p]
    for p in peer_names:
        if p not in PEER_RUNNERS:
            raise SystemExit(f"unknown peer {p!r}: choose from {', '.join(PEER_RUNNERS)}")
        peers.ensure_venv(p)  # install before any timing
    from inferctl.local.tinymodel import ensure_tiny_model

    tokenizer = str(ensure_tiny_model())  # a local tokenizer for vllm bench's random dataset (no hub)
    tmp = tempfile.mkdtemp(prefix="inferctl-bench-")
    result: dict = {"cpus": os.cpu_count(), "pinned": TWO_CORES, "nice": NICE, "load_avg_start": os.getloadavg()}
    med = statistics.median

    if not args.skip_throughput:
        # One table for every concurrency asked (e.g. 64,512), all from this one run.
        result["throughput"] = by_conc = {}
        fake, url = start_fake(0)
        try:
            for conc in (int(c) for c in args.concurrency.split(",")):
                by_conc[str(conc)] = tp = {"concurrency": conc, "requests": args.requests,
                                           "context": args.context, "output_tokens": args.output_tokens}
                ours: dict[str, list] = {w: [] for w in args.workers.split(",")}
                theirs = []
                others: dict[str, list] = {p: [] for p in peer_names}
                for _ in range(args.repeats):
                    for w in ours:
                        ours[w].append(run_inferctl(url, conc, args.requests, conc, args.context,
                                                    args.output_tokens, tmp, w))
                    if not args.skip_vllm:
                        theirs.append(run_vllm(url, conc, args.requests, conc, args.context, args.output_tokens,
                                               tmp, tokenizer))
                    for p, runs_p in others.items():
                        runs_p.append(PEER_RUNNERS[p](url, conc, args.requests, conc, args.context,
                                                      args.output_tokens, tmp, tokenizer))
                tp["inferctl_runs"], tp["vllm_runs"] = ours, theirs
                for p, runs_p in others.items():
                    tp[f"{p}_runs"] = runs_p
                    tp[f"{p}_req_per_s"] = med(r["req_per_s"] for r in runs_p)
                    tp[f"{p}_cpu_ms_per_req"] = med(r["client_cpu_ms_per_req"] for r in runs_p)
                if theirs:
                    tp["vllm_req_per_s"] = med(r["req_per_s"] for r in theirs)
                    tp["vllm_cpu_ms_per_req"] = med(r["client_cpu_ms_per_req"] for r in theirs)
                peer_rates = {name: tp[f"{name}_req_per_s"] for name in ["vllm", *peer_names]
                              if f"{name}_req_per_s" in tp}
                fastest = max(peer_rates, key=peer_rates.get) if peer_rates else None
                for w, runs in ours.items():
                    tp[f"inferctl_workers_{w}_req_per_s"] = rate = med(r["req_per_s"] for r in runs)
                    tp[f"inferctl_workers_{w}_cpu_ms_per_req"] = med(r["client_cpu_ms_per_req"] for r in runs)
                    if theirs:
                        tp[f"ratio_workers_{w}"] = round(rate / tp["vllm_req_per_s"], 2)
                    if fastest:
                        tp[f"ratio_workers_{w}_vs_fastest_peer"] = round(rate / peer_rates[fastest], 2)
                tp["fastest_peer"] = fastest
                print(json.dumps({"concurrency": conc, **{k: v for k, v in tp.items() if not k.endswith("_runs")}}),
                      file=sys.stderr, flush=True)
        finally:
            fake.terminate()
            fake.wait()

    if not args.skip_ttft:
        c = args.ttft_concurrency
        out = args.ttft_output_tokens
        result["ttft"] = tt = {"injected_ttft_ms": args.ttft_ms, "injected_itl_ms": args.itl_ms,
                               "output_tokens": out, "concurrency": c, "requests": 4 * c, "warmup": c}
        fake, url = start_fake(args.ttft_ms, args.itl_ms)
        try:
            runs: dict[str, list] = {f"inferctl_workers_{w}": [] for w in args.ttft_workers.split(",")}
            if not args.skip_vllm:
                runs["vllm"] = []
            for p in peer_names:
                runs[p] = []
            for _ in range(args.ttft_repeats):
                for name in runs:
                    truth(url, "DELETE")
                    if name == "vllm":
                        r = run_vllm(url, c, 4 * c, c, args.context, out, tmp, tokenizer)
                    elif name in PEER_RUNNERS:
                        r = PEER_RUNNERS[name](url, c, 4 * c, c, args.context, out, tmp, tokenizer)
                    else:
                        r = run_inferctl(url, c, 4 * c, c, args.context, out, tmp, name.rsplit("_", 1)[1])
                    t = truth(url)  # in request-arrival order: the first c are the warm-up wave, when one was sent
                    t = t[c:] if len(t) > 4 * c else t  # (sorting first would drop the c *fastest* instead)
                    r["truth_p50_ms"] = round(med(t) * 1000, 3)
                    r["error_ms"] = round(r["ttft_p50_ms"] - r["truth_p50_ms"], 3)
                    runs[name].append(r)
            tt["runs"] = runs
            for name, rs in runs.items():
                tt[f"{name}_error_ms_median"] = med(r["error_ms"] for r in rs)
                tt[f"{name}_error_ms_spread"] = [min(r["error_ms"] for r in rs), max(r["error_ms"] for r in rs)]
        finally:
            fake.terminate()
            fake.wait()
    result["load_avg_end"] = os.getloadavg()
    shutil.rmtree(tmp, ignore_errors=True)
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
