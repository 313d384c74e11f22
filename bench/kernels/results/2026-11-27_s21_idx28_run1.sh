#!/usr/bin/env bash
# IDX28 (session 21) device call 1: the select folded into the score grid (plan.fold_ctas).
# A/B of main 462a085's bench_attention (build-final, _base) vs wip/idx28's, --indexer-plan-only
# --indexer-trace (top-512 and top-1024), configs alternated (order reversed every other round):
#   main: base binary; n: the branch's plan (fold_ctas 128); f0: the branch's binary with the fold
#   off (DSV4_IDX28_FOLD=0: main's kernels but for the fast list kernel's register assignment; the
#   select SASS-identical); f32 / f64: 32 / 64 fold CTAs; fall: every CTA of the token (256 at
#   T=1 x 256K).
# Then --indexer-chain (8 calls per graph) per config, then parity in parallel (the list family
# with the fold variants, three + pack, indexer_fast + _fp8, indexer_fast_fp4, test_gpu_model).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx28/idx28_r1.tar.xz
G=build-gpu-idx28; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx28_logs; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
}
cfg() {  # tag -> "binary fold"
  case $1 in
    main) echo "$G/bench_attention_base -";;
    n) echo "$G/bench_attention -";;
    f0) echo "$G/bench_attention 0";;
    f32) echo "$G/bench_attention 32";;
    f64) echo "$G/bench_attention 64";;
    fall) echo "$G/bench_attention 1000000";;
  esac
}
run_cfg() {  # tag args...
  local tag=$1; shift
  set -- $(cfg $tag) "$@"
  local bin=$1 fold=$2; shift 2
  if [ "$fold" = "-" ]; then timeout 25 $bin "$@"; else DSV4_IDX28_FOLD=$fold timeout 25 $bin "$@"; fi
}
bench() {  # tag round
  local tag=$1 r=$2
  local extra="--no-ceilings"; [ $r -le 1 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  run_cfg $tag --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
chain() {  # tag
  local tag=$1
  echo "== chain $tag t+$(el)" >> $L/chain.txt
  run_cfg $tag --indexer-chain --no-ceilings > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/chain.txt
  echo "chain $tag rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="main n f0 f32 f64 fall"; else order="fall f64 f32 f0 n main"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 36 ] || break
done
for x in main n f0 fall f64 f64 fall f0 n main; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its plan rows ("fp4 plan" and "fp4 plan again") at top-k
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in main n f0 f32 f64 fall; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 182 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p list --filter indexer_fast_fp4_list &
p three_pack --filter indexer_fast_fp4_three,indexer_fp4_pack &
p fast_fp8 --filter indexer_fast,indexer_fast_fp8 &
p fp4_long --filter indexer_fast_fp4 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-220; done
grep -h "fold" $P/list.txt | cut -c1-200
tar czf $OUT/idx28_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
