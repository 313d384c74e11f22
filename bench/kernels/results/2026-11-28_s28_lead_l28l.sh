#!/usr/bin/env bash
# Session 28 lead, call l28l (H100): ncu --set full of the decode attention kernel at HCA 1M T=32 (engine's plan):
# the bf16 pools' first launch and an FP8 records launch (raw metrics, CSV), for the consumer redesign's bound analysis.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28l/l28l.tar.xz $G
cat $G/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
C="32,64,hca,1048576,0"
timeout 150 $NCU --set full --page raw --csv -k regex:attention_decode_ws_kernel --launch-skip 0 --launch-count 1 \
  $G/bench_attention --kv-fp8-ab --no-ceilings --cases "$C" > $OUT/ncu_bf16.csv 2> $OUT/ncu_bf16_err.txt; echo "bf16 exit $? t=$(el)"
DSV4_KVFP8_NCU=1 timeout 150 $NCU --set full --page raw --csv -k regex:attention_decode_ws_kernel --launch-skip 1 --launch-count 1 \
  $G/bench_attention --kv-fp8-ab --no-ceilings --cases "$C" > $OUT/ncu_fp8.csv 2> $OUT/ncu_fp8_err.txt; echo "fp8 exit $? t=$(el)"
ls -la $OUT; cat $OUT/ncu_bf16_err.txt $OUT/ncu_fp8_err.txt | tail -n 4
