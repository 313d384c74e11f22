#!/usr/bin/env bash
# Session 24 lead, call l24i (H200): completes l24h (same binaries, .bin/l24h): the fp8 parity group alone (l24h's ran out
# of its 150 s beside the other groups after 125 OK), and the decode-step comparison with session 23's test_gpu_model
# (l24h's base runs failed: its test-data path /work/wt/base24 was not linked on the device).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24h/l24h.tar.xz $G
cat $G/commit.txt
for root in /work/main /work/wt/base24; do [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"; done
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24i; rm -rf $L; mkdir -p $L/e2e
timeout 200 $G/test_backend_ops --filter linear_decode_fp8act,linear_decode_fp8act_plans,linear_fp8_cublaslt > $L/parity_fp8.txt 2>&1; echo "exit $?" >> $L/parity_fp8.txt
echo "fp8 parity t=$(el): $(grep -c ' OK' $L/parity_fp8.txt) OK, $(grep -c FAIL $L/parity_fp8.txt) FAIL; $(tail -2 $L/parity_fp8.txt | tr '\n' ' ')"
for r in 1 2 3; do for b in base new; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  timeout 90 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1; echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): /b\1 /' | tr '\n' ';') $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
tar czf $OUT/l24i_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
