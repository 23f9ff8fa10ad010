#!/usr/bin/env bash
# The planner's memory model against vLLM on a real GPU (issue 18, item 2). Runs ON the GPU machine, after the
# rig is staged (../shared/gpu/README.md, steps 1-2), in one command of at most 10 minutes:
#
#   CELLS="31b:8192 31b:32768 26b-a4b:32768" bash benchmarks/gpu/kv_validation.sh
#
# For each SHAPE:MAX_MODEL_LEN it builds the checkpoint (random weights), starts vLLM with DEBUG logging (so
# the log carries the memory profile: requested budget, activation peak, non-torch memory, CUDA-graph
# estimate), keeps the whole server log whether the engine started or refused the length, and stops it.
# Everything lands in $OUT/kv.tgz: one log and one config.json per cell plus the GPU's own memory total.
# Unpack it into benchmarks/gpu/data/<gpu>-vllm-<version>-<date>/ and run kv_compare.py there (CPU): the
# suite then checks the planner against it on every `make test`.
set -u
: "${CELLS:?set CELLS, e.g. CELLS='31b:8192 26b-a4b:32768'}"
: "${OUT:?OUT must be set (the device tool sets it)}"
. /tmp/rig/rig.sh env
export VLLM_LOGGING_LEVEL=DEBUG
dest=$OUT/kv
mkdir -p "$dest"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$dest/gpu.csv" 2>&1
python3 -c "import torch, vllm; f, t = torch.cuda.mem_get_info(); print(f'{{\"mem_get_info_total\": {t}, \"vllm\": \"{vllm.__version__}\"}}')" > "$dest/device.json" 2>&1
date -u +%Y-%m-%d > "$dest/date"
for cell in $CELLS; do
  shape=${cell%%:*}; len=${cell##*:}
  dir=/tmp/m-$shape
  [ -d "$dir" ] || bash /tmp/rig/rig.sh model "$shape" "$dir" > /dev/null
  cp "$dir/config.json" "$dest/$shape.config.json"
  echo "== $shape at $len"
  # A length the KV cache cannot hold makes vLLM exit after profiling: that log is a result too.
  timeout 400 bash /tmp/rig/rig.sh serve "$dir" "gemma-4-$shape" "$len" --no-enable-prefix-caching || true
  cp /tmp/rig/server.log "$dest/$shape-$len.log"
  bash /tmp/rig/rig.sh stop
done
tar czf "$OUT/kv.tgz" -C "$OUT" kv && rm -rf "$dest"
