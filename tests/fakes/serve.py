"""Run the fake vLLM server as its own process (for CLI tests and benchmarks).

    python -m tests.fakes.serve --port 8123 --ttft-ms 5 --itl-ms 1 [--instant] [--max-model-len 4096]

Prints ``READY <url>`` on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.fakes.fake_vllm import FakeConfig, FakeVLLM


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ttft-ms", type=float, default=5.0)
    p.add_argument("--itl-ms", type=float, default=1.0)
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--instant", action="store_true")
    p.add_argument("--fault-cycle", default="", help="comma list of fault kinds, '' for ok, e.g. ',,,503'")
    args = p.parse_args(argv)
    cfg = FakeConfig(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, max_model_len=args.max_model_len,
                     instant=args.instant,
                     fault_cycle=args.fault_cycle.split(",") if args.fault_cycle else [])
    with FakeVLLM(cfg) as fake:
        print(f"READY {fake.url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":
    main()
