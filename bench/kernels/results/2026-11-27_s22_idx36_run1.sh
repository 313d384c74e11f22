#!/usr/bin/env bash
# IDX36 (session 22) device call 1: the indexer select kernel's ranking after F (T=1 x 256K FP4).
# Binaries: base = main 082824a's bench_attention (/work/main/build-cuda); the branch
# wip/idx36-variants 1438cb6 with DSV4_IDX36_MODE (list-mode select kernel variant):
#   m0 main's ranking (SASS-identical kernel), m1 compact ranking (__noinline__, rolled loop, F
#   padded), m2 = m1 + warm-up of the ranking function by warps 28-31 before the wait;
#   m4 / m5 / m6 = m0 / m1 / m2 + clock64 stamps inside the ranking (first key ranked twice).
# 1. base m0 m1 m2 --indexer-plan-only --indexer-trace, 4 rounds, order reversed every other round;
#    m4 m5 m6 (x2, with --indexer-prologue: L2-kept traces too); --indexer-chain base m0 m1 m2 m2 m1 m0 base.
# 2. ncu (stall sampling) of the select kernel: base, m1, m2.
# 3. parity: families (m1, m2, m6), indexer_fast_fp4 (m1, m2) in the background, test_gpu_model (m2, one process).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx36/idx36_r1.tar.xz
G=build-gpu-idx36; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx36_logs; rm -rf $L; mkdir -p $L/parity $L/ncu
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')| $(grep -E 'select diag warp 0 (stored|pass 2 stored)' $f | awk '{printf "%s ", $(NF-3)}' | cut -c1-60)"
}
run_cfg() {  # tag args...
  local tag=$1; shift
  case $tag in
    base) timeout 25 $G/bench_attention_base "$@";;
    m*) DSV4_IDX36_MODE=${tag#m} timeout 25 $G/bench_attention "$@";;
  esac
}
bench() {  # tag round [extra]
  local tag=$1 r=$2; shift 2
  local extra="--no-ceilings"; [ $r -le 1 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  run_cfg $tag --indexer-plan-only --indexer-trace $extra "$@" > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
chain() {
  local tag=$1
  echo "== chain $tag t+$(el)" >> $L/chain.txt
  run_cfg $tag --indexer-chain --no-ceilings > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/chain.txt
  echo "chain $tag rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores | diag"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="base m0 m1 m2"; else order="m2 m1 m0 base"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 50 ] || break
done
for x in m4 m5 m6 m6 m5 m4; do bench $x 2 --indexer-prologue; done
for x in base m0 m1 m2 m2 m1 m0 base; do chain $x; done
rm -f $L/cur.txt
med() {
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in base m0 m1 m2; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
for x in base m0 m1 m2 m4 m5 m6; do
  echo "== select trace $x (first process; per shape: score_list traces)"
  awk '/^== .* r[12] /{n++} n==1' $L/bench_$x.txt | grep -E "indexer phase trace|trace score_list|select (entry|wait|F|end)|select diag" | head -60
done
echo "== ncu t+$(el)"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu); $NCU --version | tail -1
ncu_run() {  # tag ranges...
  local tag=$1; shift
  local bin=$G/bench_attention; [ $tag = base ] && bin=$G/bench_attention_base
  DSV4_IDX36_MODE=${tag#m} timeout 40 $NCU --clock-control none --warp-sampling-interval 0 --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -k regex:indexer_select_kernel -s 5 -c 1 -f -o /tmp/ncu_$tag \
    $bin --indexer-plan-only --no-ceilings > $L/ncu/${tag}_log.txt 2>&1
  echo "ncu $tag rc=$? t+$(el)"
  $NCU -i /tmp/ncu_$tag.ncu-rep --page details > $L/ncu/${tag}_details.txt 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass > /tmp/src_$tag.csv 2>/dev/null
  python3 $G/ncu_sum.py /tmp/src_$tag.csv "$@" > $L/ncu/${tag}_sum.txt 2>&1
  gzip -c /tmp/src_$tag.csv > $L/ncu/${tag}_src.csv.gz
  grep -E "Duration|Warp Cycles Per Issued|No Eligible|Executed Instructions  " $L/ncu/${tag}_details.txt | head -6 | sed -E 's/ +/ /g'
  head -12 $L/ncu/${tag}_sum.txt
}
ncu_run base pre=0x0-0x20f0 rank=0x20f0-0x4fd0
[ $(el) -lt 120 ] && ncu_run m1 rank_kernel=0xe370-0xe5d0 rank_func=0xf810-0x10b10
[ $(el) -lt 125 ] && ncu_run m2 warm_call=0x0-0x9b0 rank_kernel=0xe790-0xea40 rank_func=0xfcd0-0x10ed0
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 192 - $(el) )); [ $lim -gt 150 ] && lim=150; [ $lim -lt 45 ] && lim=45
echo "parity limit ${lim}s"
p() { local tag=$1 mode=$2 bin=$3; shift 3; DSV4_IDX36_MODE=$mode timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p m1_fp4 1 test_backend_ops --filter indexer_fast_fp4 &
p m2_fp4 2 test_backend_ops --filter indexer_fast_fp4 &
p m1_families 1 test_backend_ops --filter $F &
p m2_families 2 test_backend_ops --filter $F &
p m6_families 6 test_backend_ops --filter $F &
p m2_gpu_model 2 test_gpu_model &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx36_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
