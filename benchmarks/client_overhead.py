"""How fast and how accurate is inferctl's load generator? Measured against a peer in the same run.

1. Throughput: against tests/fakes/fast_fake.py returning every token instantly, the request rate
   inferctl's engine sustains vs `vllm bench serve`, same concurrency, prompt and output length,
   same completions endpoint. Alternating runs; the median of each is reported with the ratio.
2. TTFT accuracy: the fake delays the first token by a known amount and records its own truth
   (first-token write − request arrival). inferctl's p50 TTFT at concurrency 256 vs that truth
   (and vllm bench serve's, for reference).

    .venv/bin/python benchmarks/client_overhead.py [--concurrency 64] [--requests 4000] [--repeats 3]

With PIN=1, server and clients are pinned to different cores (taskset); off by default because on a
shared machine pinning also pins the neighbours' load onto one core.
Prints a JSON summary; docs/performance.md records the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
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
TWO_CORES = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None and bool(os.environ.get("PIN"))


def pin(core: int, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", str(core), *cmd] if TWO_CORES else cmd


def start_fake(ttft_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(pin(0, [PY, "-m", "tests.fakes.fast_fake", "--ttft-ms", str(ttft_ms)]), cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("READY"), line
    return proc, line.split()[1]


def truth(url: str, method: str = "GET") -> list[float]:
    req = urllib.request.Request(url + "/truth", method=method)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def run_inferctl(url: str, conc: int, n: int, warmup: int, ctx: int, out: int, tmp: str) -> dict:
    cmd = pin(1, [str(Path(PY).parent / "inferctl"), "bench", "run", "--url", url, "--context", str(ctx),
                  "--concurrency", str(conc), "--output-tokens", str(out), "--requests", str(n), "--warmup",
                  str(warmup), "--api", "completions", "--runs-dir", tmp, "--json"])
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    cell = json.loads(res.stdout)["cells"][0]
    m = cell["metrics"]
    return {"req_per_s": m["request_throughput"], "ok": m["ok"], "ttft_p50_ms": m["ttft"]["p50"],
            "client_bound": cell["client"]["client_bound"], "cpu": cell["client"]["cpu_fraction"]}


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
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--output-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--ttft-concurrency", type=int, default=256)
    ap.add_argument("--skip-vllm", action="store_true")
    args = ap.parse_args()
    from inferctl.local.tinymodel import ensure_tiny_model

    tokenizer = str(ensure_tiny_model())  # a local tokenizer for vllm bench's random dataset (no hub)
    tmp = tempfile.mkdtemp(prefix="inferctl-bench-")
    result: dict = {"concurrency": args.concurrency, "requests": args.requests, "context": args.context,
                    "output_tokens": args.output_tokens, "pinned": TWO_CORES, "cpus": os.cpu_count()}

    fake, url = start_fake(0)
    try:
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(run_inferctl(url, args.concurrency, args.requests, args.concurrency, args.context,
                                     args.output_tokens, tmp))
            if not args.skip_vllm:
                theirs.append(run_vllm(url, args.concurrency, args.requests, args.concurrency, args.context,
                                       args.output_tokens, tmp, tokenizer))
        result["inferctl_runs"], result["vllm_runs"] = ours, theirs
        result["inferctl_req_per_s"] = statistics.median(r["req_per_s"] for r in ours)
        if theirs:
            result["vllm_req_per_s"] = statistics.median(r["req_per_s"] for r in theirs)
            result["throughput_ratio"] = round(result["inferctl_req_per_s"] / result["vllm_req_per_s"], 2)
    finally:
        fake.terminate()
        fake.wait()

    fake, url = start_fake(args.ttft_ms)
    try:
        c = args.ttft_concurrency
        truth(url, "DELETE")
        ours = run_inferctl(url, c, 4 * c, c, args.context, args.output_tokens, tmp)
        t = sorted(truth(url))[c:]  # the warm-up wave is excluded on our side too
        result["ttft"] = {"injected_ms": args.ttft_ms, "concurrency": c,
                          "server_truth_p50_ms": round(statistics.median(t) * 1000, 3),
                          "inferctl_p50_ms": ours["ttft_p50_ms"]}
        result["ttft"]["inferctl_error_ms"] = round(ours["ttft_p50_ms"] - result["ttft"]["server_truth_p50_ms"], 3)
        if not args.skip_vllm:
            truth(url, "DELETE")
            theirs = run_vllm(url, c, 4 * c, c, args.context, args.output_tokens, tmp, tokenizer)
            t2 = statistics.median(truth(url)) * 1000
            result["ttft"]["vllm_p50_ms"] = round(theirs["ttft_p50_ms"], 3)
            result["ttft"]["vllm_error_ms"] = round(theirs["ttft_p50_ms"] - t2, 3)
    finally:
        fake.terminate()
        fake.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
