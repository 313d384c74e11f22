#!/usr/bin/env bash
# LIN10 (session 23) device call 1 (H200): linear_decode at <= 8 tokens, register pipeline vs a
# per-warp shared-memory cp.async ring (branch wip/lin10; binaries in .bin/lin10/lin10_r1.tar.xz).
# Binaries: bench_linear_gemm / test_backend_ops / test_gpu_model = the branch (default at <= 8
# tokens: ring of 6 stages; DSV4_LINEAR_DECODE_RING=0 / 4 / 8 overrides the default,
# DSV4_LINEAR_DECODE_RING_XA=1 loads the activations a round ahead), and
# bench_linear_gemm_base = main 79f2e8d (build-s23base).
# 1. bench_linear_gemm --ring-ab (ours: reg / ring4 / ring6 / ring8 / ring4xa / ring6xa / ring6 on
#    half and twice the K parts / reg again, one process) -> 2. parity in parallel: linear_decode,
#    _grouped, _ring with the ring-6 default; linear_decode + _grouped with ring 4 + x ahead and
#    with registers (=0); test_gpu_model (ring-6 default) -> 3. main's bench_linear_gemm --decode-only
#    (reference) -> 4. --ring-ab again -> 5. base --decode-only again if time is left.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/lin10/lin10_r1.tar.xz
G=build-gpu-lin10; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/lin10_logs; rm -rf $L; mkdir -p $L/parity
echo "extracted t+$(el)"
# compact: shape kind T ks | reg ring4 ring6 ring8 ring4xa ring6xa ring6/2 ring6x2 reg2 (us)
summ_ring() { grep '^ring ' $1 | awk -F'|' '{split($1,h," "); printf "%s %s %s %s", h[2], h[3], h[6], h[7]; for (i=2;i<=NF;i++){n=split($i,f," "); printf " %s", (n>=2 && f[2]!="-") ? f[2] : "-"} printf "\n"}'; }
ringab() {  # round
  echo "== ring-ab r$1 t+$(el)" >> $L/ring_ab.txt
  timeout 60 $G/bench_linear_gemm --ring-ab > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/ring_ab.txt
  echo "ring-ab r$1 rc$rc t+$(el) $(grep -E 'ceiling' $L/cur.txt | awk '{printf "%s ", $(NF-1)}')"
  summ_ring $L/cur.txt
}
basedec() {  # round
  echo "== base --decode-only r$1 t+$(el)" >> $L/base_decode.txt
  timeout 50 $G/bench_linear_gemm_base --decode-only > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/base_decode.txt
  echo "base decode-only r$1 rc$rc t+$(el) $(grep -E 'ceiling' $L/cur.txt | awk '{printf "%s ", $(NF-1)}')"
  grep -E '^(fl|pro)\.(wq_b|wo_b|sh_w13|sh_w2) ' $L/cur.txt | awk '$5<=8' | sed -E 's/\| gemv.*\| linear_decode +([0-9.]+) us +([0-9.]+%).*/ld \1 us \2/' | tr -s ' '
}
ringab 1
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2 mode=$3; shift 3; if [ "$mode" = def ]; then timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; else DSV4_LINEAR_DECODE_RING=$mode timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; fi; echo "exit $?" >> $P/$tag.txt; }
p ring6 100 def --filter linear_decode,linear_decode_grouped,linear_decode_ring &
( export DSV4_LINEAR_DECODE_RING_XA=1; p ring4xa 100 4 --filter linear_decode,linear_decode_grouped ) &
p reg 100 0 --filter linear_decode,linear_decode_grouped &
( timeout 70 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
echo "parity done t+$(el)"
basedec 1
[ $(el) -lt 150 ] && ringab 2
[ $(el) -lt 150 ] && basedec 2
rm -f $L/cur.txt
tar czf $OUT/lin10_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
