"""Soak: many requests through inferctl's load engine against the fast fake; any error fails the run.

Starts tests/fakes/fast_fake.py on 127.0.0.1 (loopback only, a free port), runs one `inferctl bench run`
cell of --requests measured requests (default 1,000,000) at concurrency 256 with short outputs, then reads
the run's requests.jsonl: every record (warm-up included) must be `ok`, and the count must match. The
whole run is bounded by --max-seconds of wall-clock time (the bench is killed past it: a failure).

    .venv/bin/python benchmarks/soak.py [--requests 1000000] [--concurrency 256] [--output-tokens 4] \
        [--context 16] [--workers auto] [--max-seconds 7200] [--ttft-ms 0 --itl-ms 0]

Exit status 0 when every request succeeded; 1 otherwise (the errors, counted by status and message,
are printed). Prints a JSON summary (docs/performance.md records a run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def start_fake(ttft_ms: float, itl_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([PY, "-m", "tests.fakes.fast_fake", "--host", "127.0.0.1", "--port", "0",
                             "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                [str(ROOT), os.environ.get("PYTHONPATH", "")])})
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line.startswith("READY"):
        proc.kill()
        raise SystemExit(f"the fast fake did not start: {line!r}")
    return proc, line.split()[1]


def fake_stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/cpu", timeout=10) as r:
        return json.loads(r.read())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000, help="measured requests (default 1,000,000)")
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--output-tokens", type=int, default=4)
    ap.add_argument("--context", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=256)
    ap.add_argument("--workers", default="auto", help="inferctl --workers (N or auto)")
    ap.add_argument("--max-seconds", type=float, default=7200.0, help="wall-clock bound for the whole run")
    ap.add_argument("--ttft-ms", type=float, default=0.0, help="the fake's first-token delay (0: instant)")
    ap.add_argument("--itl-ms", type=float, default=0.0, help="the fake's inter-token delay")
    ap.add_argument("--keep", action="store_true", help="keep the run directory (default: deleted when clean)")
    args = ap.parse_args()
    if args.requests < 1 or args.concurrency < 1 or args.max_seconds <= 0:
        raise SystemExit("--requests and --concurrency must be at least 1 and --max-seconds positive")

    tmp = tempfile.mkdtemp(prefix="inferctl-soak-")
    fake, url = start_fake(args.ttft_ms, args.itl_ms)
    inferctl = str(Path(PY).parent / "inferctl")
    cmd = [inferctl, "bench", "run", "--url", url, "--api", "completions", "--context", str(args.context),
           "--concurrency", str(args.concurrency), "--output-tokens", str(args.output_tokens),
           "--requests", str(args.requests), "--warmup", str(args.warmup), "--workers", args.workers,
           "--timeout", "60", "--runs-dir", tmp, "--json"]
    summary: dict = {"requests": args.requests, "concurrency": args.concurrency, "output_tokens": args.output_tokens,
                     "context": args.context, "warmup": args.warmup, "workers": args.workers,
                     "fake": {"ttft_ms": args.ttft_ms, "itl_ms": args.itl_ms}, "cpus": os.cpu_count(),
                     "load_avg_start": os.getloadavg()}
    failed = False
    try:
        cpu0 = fake_stats(url)["cpu_seconds"]
        t0 = time.monotonic()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.max_seconds)
        except subprocess.TimeoutExpired:
            summary["error"] = f"did not finish within --max-seconds {args.max_seconds:g}"
            print(json.dumps(summary, indent=2))
            return 1
        wall = time.monotonic() - t0
        summary["wall_s"] = round(wall, 1)
        summary["fake_cpu_s"] = round(fake_stats(url)["cpu_seconds"] - cpu0, 1)
        summary["client_max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
        if res.returncode:
            summary["error"] = f"inferctl bench run exited {res.returncode}: {res.stderr[-2000:]}"
            print(json.dumps(summary, indent=2))
            return 1
        data = json.loads(res.stdout)
        m = data["cells"][0]["metrics"]
        summary["req_per_s"] = m["request_throughput"]
        statuses: Counter = Counter()
        errors: Counter = Counter()
        records = 0
        with open(Path(data["path"]) / "requests.jsonl") as f:
            for line in f:
                rec = json.loads(line)
                records += 1
                statuses[rec.get("status")] += 1
                if rec.get("status") != "ok":
                    errors[f'{rec.get("status")}: {rec.get("error", "")}'[:200]] += 1
        summary["records"] = records
        summary["statuses"] = dict(statuses)
        expected = args.requests + args.warmup
        if errors:
            summary["errors"] = dict(errors.most_common(20))
            failed = True
        if records < expected:
            summary["error"] = f"requests.jsonl holds {records} records, expected at least {expected}"
            failed = True
        summary["load_avg_end"] = os.getloadavg()
        summary["result"] = "FAIL" if failed else "PASS"
        print(json.dumps(summary, indent=2))
        return 1 if failed else 0
    finally:
        fake.terminate()
        fake.wait()
        if args.keep or failed:
            print(f"run directory: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
