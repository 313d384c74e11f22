#!/usr/bin/env bash
# Session 45, call l45e (H200): the cluster fold (chain 512, bench letter z; branch s45-icache-cold):
# the W1/W3 blocks of each 128-row group of h run as one thread block cluster, exchange their
# rows' maxima of |h| through distributed shared memory and each quantizes and releases its own
# rows (no fold counter round trip, no f32 hf store and reload, no last block). 1) parity of the
# chain 895 cases (each bit for bit against chain 0 and against the CPU); 2) decode A/B, default
# against default + z, alternated in one process, twice; 3) block traces of both (T = 1 / 4);
# 4) test_gpu_model. The 120 other moe_decode kernels are SASS-identical to main's (checked on
# the build machine).
set -uo pipefail
nvidia-smi -L
N=l45e
source scripts/device_call_prelude.sh
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*chain895' BY=cases bash scripts/gpu_parity_all.sh 16 120 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -2 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | head -8 | cut -c1-300
echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
D=s0x4.2.4hwlpfgmcqayaka
for pass in 1 2; do
  timeout -s KILL 200 $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}z --shapes flash,pro --formats mxfp4 --tokens 1,2,4,8,16 --replays 12 --replay-gap-ms 80 > $L/ab_$pass.txt 2>&1
  echo "== ab $pass rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/ab_$pass.txt | cut -c1-160
done
timeout -s KILL 100 $G/bench_moe_linear --decode-ab --ab-official --ab $D,${D}z --shapes flash,pro --formats nvfp4 --tokens 1,4 --replays 12 --replay-gap-ms 80 > $L/ab_nvfp4.txt 2>&1
echo "== ab nvfp4 rc=$? t=$(el)"; grep -E "speed vs" $L/ab_nvfp4.txt | cut -c1-160
save
export DSV4_MOE_TRACE_RAW=$L/raw_trace.tsv
timeout -s KILL 100 $G/bench_moe_linear_trace --decode-ab --ab-official --ab $D,${D}z --shapes flash,pro --formats mxfp4 --tokens 1,4 --replays 6 > $L/trace.txt 2>&1
echo "== trace rc=$? t=$(el)"; unset DSV4_MOE_TRACE_RAW
python3 scripts/moe_trace_raw.py $L/raw_trace.tsv summary > $L/summary.txt 2>&1; grep "call 1" $L/summary.txt | cut -c1-200
save
timeout -s KILL 100 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"
save; echo "done t=$(el)"
