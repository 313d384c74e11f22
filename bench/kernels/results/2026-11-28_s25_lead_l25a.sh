#!/usr/bin/env bash
# Session 25 lead, call l25a: where today's decode step goes (main f96e1cc): ncu device time per kernel of one
# graph-replayed decode step of the flash-dims 3-layer synthetic checkpoint (official, bf16), batch 3 (step 6) and
# batch 2 (step 18); then bench_attention --focus (today's attention/indexer figures on this GPU).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l25a/l25a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=$OUT; NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for s in 6 18; do
  timeout 150 $NCU --profile-from-start off --csv --cache-control none --clock-control none --metrics gpu__time_duration.sum \
    $G/test_gpu_model --profile-step $s > $L/step$s.csv 2> $L/step${s}_err.txt; echo "exit $? t=$(el)"
  grep gpu-profile $L/step$s.csv | head -2
  python3 scripts/ncu_step_breakdown.py $L/step$s.csv > $L/step${s}_breakdown.txt 2>&1; head -40 $L/step${s}_breakdown.txt
done
timeout 200 $G/bench_attention --focus > $L/attn_focus.txt 2>&1; echo "focus exit $? t=$(el)"
grep -vE "^\s*$" $L/attn_focus.txt | head -80
