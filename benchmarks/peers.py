"""Peer load generators (GuideLLM, AIPerf) in throwaway venvs, run against the same fast fake as inferctl.

Each peer is installed from PyPI into its own venv under $INFERCTL_PEERS_DIR (default:
$TMPDIR/inferctl-peers), never into the project's environment, pinned to the version below, created on
first use and reused after (delete the folder to throw them away). GuideLLM requires torch, and PyPI's
Linux torch wheel pulls the CUDA libraries (gigabytes): on a machine without a GPU set
INFERCTL_PEERS_TORCH to pip arguments for a CPU build, installed first, e.g.
``INFERCTL_PEERS_TORCH="torch --index-url https://download.pytorch.org/whl/cpu"`` or a local
``torch==2.13.0+cpu`` wheel that pip can find.
Every runner takes the same workload as client_overhead.py's: a closed loop of ``conc`` streams, ``n``
measured requests of ``ctx`` prompt tokens (from the same local tokenizer) and exactly ``out`` output
tokens on /v1/completions, one warm-up wave, and returns {"req_per_s", "ok", "ttft_p50_ms"} read from the
peer's own result file.

    .venv/bin/python benchmarks/peers.py install            # create both venvs (minutes; network)
    .venv/bin/python benchmarks/peers.py smoke URL TOKENIZER  # a few requests each, to check the wiring
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEERS = {
    # name: (pip requirement, console script)
    "guidellm": ("guidellm==0.8.1", "guidellm"),
    "aiperf": ("aiperf==0.13.0", "aiperf"),
}


def peers_dir() -> Path:
    return Path(os.environ.get("INFERCTL_PEERS_DIR") or Path(tempfile.gettempdir()) / "inferctl-peers")


def ensure_venv(name: str) -> Path:
    """The peer's console script, installing its venv first if needed (python -m venv + pip install)."""
    req, script = PEERS[name]
    venv = peers_dir() / req.replace("==", "-")
    exe = venv / "bin" / script
    if exe.exists():
        return exe
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    torch = os.environ.get("INFERCTL_PEERS_TORCH")
    if name == "guidellm" and torch:  # GuideLLM requires torch; PyPI's Linux wheel brings CUDA (gigabytes)
        subprocess.run([*pip, *torch.split()], check=True)
    subprocess.run([*pip, req], check=True)
    if not exe.exists():
        raise SystemExit(f"{req} installed but {exe} is missing")
    return exe


def _env(venv_exe: Path, offline: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv_exe.parent}{os.pathsep}{env.get('PATH', '')}"
    if offline:  # the tokenizer is a local directory; never reach for a hub
        env["HF_HUB_OFFLINE"] = env["TRANSFORMERS_OFFLINE"] = "1"
    return env


def _run(cmd: list[str], exe: Path, cwd: str, what: str, timeout: float, offline: bool = True) -> None:
    # AIPerf 0.13 in offline mode looks a local tokenizer path up in the hub cache and fails; given an
    # absolute path it loads it from disk without any network (offline=False).
    if os.environ.get("NICE"):  # the same scheduling priority client_overhead.py gives inferctl and vLLM
        cmd = ["nice", "-n", os.environ["NICE"], *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=_env(exe, offline), timeout=timeout)
    if res.returncode:
        raise SystemExit(f"{what} failed ({res.returncode}): {' '.join(cmd)}\n{res.stdout[-2000:]}\n"
                         f"{res.stderr[-3000:]}")


def run_guidellm(url: str, conc: int, n: int, warmup: int, ctx: int, out: int, tmp: str, tokenizer: str,
                 timeout: float = 1800) -> dict:
    """``guidellm run`` with a scenario file: one concurrent-profile benchmark, results as JSON.

    GuideLLM 0.8's command line takes plugin specs (``--backend kind=...``); the scenario file says the
    same thing in one place. HTTP/1.1 like every other client here (its default is HTTP/2).
    """
    exe = ensure_venv("guidellm")
    stamp = time.time_ns()
    path = Path(tmp) / f"guidellm-{stamp}.json"
    scenario = {"spec": {
        "backend": {"kind": "openai_http", "target": url, "model": "fake-model", "request_format": "/v1/completions",
                    "http2": False, "timeout": 600},
        "profile": {"kind": "concurrent", "streams": [conc], "warmup": {"value": warmup, "mode": "requests"}},
        "constraints": [{"kind": "max_requests", "count": n + warmup}],
        "tokenizer": {"kind": "huggingface_auto", "model": tokenizer},
        "data": [{"kind": "synthetic_text", "prompt_tokens": ctx, "output_tokens": out}],
        "outputs": [{"kind": "json", "path": str(path)}],
    }}
    spec = Path(tmp) / f"guidellm-scenario-{stamp}.json"
    spec.write_text(json.dumps(scenario))
    cmd = [str(exe), "run", "--scenario", str(spec), "--disable-console-interactive"]
    _run(cmd, exe, tmp, "guidellm run", timeout)
    report = json.loads(path.read_text())
    bench = report["benchmarks"][0]
    m = bench["metrics"]
    totals = m["request_totals"]
    # Its own requests_per_second is a distribution of instantaneous rates: the rate over the measured
    # window (after warm-up, before cool-down) is the comparable figure.
    window = bench["duration"] - (bench.get("warmup_duration") or 0) - (bench.get("cooldown_duration") or 0)
    return {"req_per_s": round(totals["successful"] / window, 2) if window > 0 else None,
            "ok": totals["successful"], "errors": totals["errored"] + totals["incomplete"],
            "ttft_p50_ms": m["time_to_first_token_ms"]["successful"]["median"]}


def run_aiperf(url: str, conc: int, n: int, warmup: int, ctx: int, out: int, tmp: str, tokenizer: str,
               timeout: float = 1800) -> dict:
    """``aiperf profile``: streaming completions at a fixed concurrency, results from its JSON export."""
    exe = ensure_venv("aiperf")
    art = Path(tmp) / f"aiperf-{time.time_ns()}"
    cmd = [str(exe), "profile", "--model", "fake-model", "--tokenizer", tokenizer, "--url", url,
           "--endpoint-type", "completions", "--streaming", "--concurrency", str(conc),
           "--request-count", str(n), "--warmup-request-count", str(warmup),
           "--isl", str(ctx), "--isl-stddev", "0", "--osl", str(out), "--osl-stddev", "0",
           "--extra-inputs", "ignore_eos:true", "--extra-inputs", f"max_tokens:{out}", "--random-seed", "0",
           "--artifact-dir", str(art), "--ui-type", "none"]
    _run(cmd, exe, tmp, "aiperf profile", timeout, offline=False)
    # The profiling phase's export (the warm-up phase has its own beside it); older layouts: the top one.
    found = [p for p in (art / "phases" / "profiling" / "profile_export_aiperf.json",
                         art / "profile_export_aiperf.json") if p.exists()]
    if not found:
        raise SystemExit(f"aiperf wrote no profile_export_aiperf.json under {art}")
    report = json.loads(found[0].read_text())

    def metric(key: str, stat: str) -> float | None:
        m = report.get(key)
        return None if not isinstance(m, dict) else m.get(stat)

    return {"req_per_s": metric("request_throughput", "avg"),
            "ok": metric("request_count", "avg"),
            "errors": (report.get("error_summary") or []),
            "ttft_p50_ms": metric("time_to_first_token", "p50")}


RUNNERS = {"guidellm": run_guidellm, "aiperf": run_aiperf}


def main(argv: list[str]) -> None:
    if argv[:1] == ["install"]:
        for name in PEERS:
            print(name, ensure_venv(name), flush=True)
        return
    if argv[:1] == ["smoke"] and len(argv) == 3:
        url, tokenizer = argv[1], argv[2]
        tmp = tempfile.mkdtemp(prefix="inferctl-peers-smoke-")
        for name, fn in RUNNERS.items():
            print(name, json.dumps(fn(url, 4, 40, 4, 32, 8, tmp, tokenizer, timeout=600)), flush=True)
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
