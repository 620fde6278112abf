#!/usr/bin/env bash
# The GPU paths in one short run (under 5 minutes on one H100/H200): parity with the original ELMo
# on the GPU (fp32 within the CPU tests' bounds; TF32 and bf16 for information), paper-size biLM
# extraction and training steps in fp32 and bf16 (benchmarks/bilm_speed.py), every stage's device
# path (benchmarks/gpu_device_runs.py), the embedder's `--device cuda`, and two data-parallel updates over NCCL when the machine has more than one GPU
# (one GPU cannot test DDP: the script says so). Results go to $OUT (default
# benchmarks/results/gpu): one JSON per part and summary.txt, the table the README quotes.
#
#   bash benchmarks/gpu_check.sh            # from the repository root, after `bash setup.sh`
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: > "$summary"
status=0
step() {   # step NAME COMMAND...: run one part, log it, keep going after a failure
  local name=$1; shift
  echo "== $name: $*" | tee -a "$summary"
  local start=$SECONDS
  if "$@" 2>&1 | tee "$OUT/$name.log" | tail -n 25 >> "$summary"; then :; fi
  local rc=${PIPESTATUS[0]}
  echo "-- $name: exit $rc, $((SECONDS - start)) s" | tee -a "$summary"
  [ "$rc" -eq 0 ] || status=1
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$summary"
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'devices', torch.cuda.device_count())" \
  | tee -a "$summary"

step parity "$PY" -m benchmarks.gpu_parity --device cuda --json "$OUT/parity.json"
step speed_fp32 "$PY" -m benchmarks.bilm_speed --device cuda --configs paper --modes extract,train --only-ours \
  --quick --json "$OUT/speed_fp32.json"
step speed_bf16 "$PY" -m benchmarks.bilm_speed --device cuda --configs paper --modes extract,train --only-ours \
  --quick --bf16 --json "$OUT/speed_bf16.json"
step update "$PY" -m benchmarks.bilm_speed --device cuda --configs paper --modes update --quick \
  --json "$OUT/update.json"

# every stage's device path: a task run of each task, the biLM's training, features and perplexity,
# CoVe, on the CPU and on the GPU (fp32, bf16)
step device_runs "$PY" -m benchmarks.gpu_device_runs --device cuda --json "$OUT/device_runs.json"

# the embedder CLI on the GPU, on the released-format fixture
printf 'The cat sat on the mat .\nPeter Blackburn\n' > "$OUT/sentences.txt"
step embed .venv/bin/elmo-embed "$OUT/sentences.txt" "$OUT/vectors.hdf5" \
  --model ../shared/data/elmo_test_fixtures/lm_weights.hdf5 --device cuda --all

gpus=$($PY -c "import torch; print(torch.cuda.device_count())")
if [ "$gpus" -gt 1 ]; then
  step ddp_fp32 .venv/bin/torchrun --standalone --nproc-per-node "$gpus" -m benchmarks.ddp_steps
  step ddp_bf16 .venv/bin/torchrun --standalone --nproc-per-node "$gpus" -m benchmarks.ddp_steps --bf16
else
  echo "== ddp: skipped: $gpus GPU; DDP needs two (tested on CPUs with gloo: tests/unit/test_ddp.py)" | tee -a "$summary"
fi
echo "gpu_check: $([ $status -eq 0 ] && echo all parts passed || echo SOME PARTS FAILED); see $summary"
exit $status
