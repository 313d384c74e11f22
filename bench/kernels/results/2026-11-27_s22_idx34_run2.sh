#!/usr/bin/env bash
# IDX34 (session 22) call 2, staged for the lead (not run by IDX34): the clean form of diag mode 7
# (wip/idx34-cf: coarse adds before the fine flush, warp 0's coarse snapshot read right after its
# own adds and scanned alone, retries 64 ns apart, one barrier for the bound) vs main's
# bench_attention (/work/main/build-cuda) in the same call.
# 1. --indexer-plan-only --indexer-trace, 4 rounds alternating; --indexer-chain base cf cf base.
# 2. parity: the five families, indexer_fast_fp4 (150 s), test_gpu_model (one process).
# run(command="bash .bin/idx34/idx34_r2.sh", carry=[".bin/idx34", ".deps"], timeout_s=220)
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx34/idx34_r2.tar.xz
G=build-gpu-idx34; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx34_logs2; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')| $(grep -E 'listed candidates' $f | awk 'NR%2==1{printf "L%s ", $3}')"
}
run_cfg() {  # tag args...
  local tag=$1; shift
  case $tag in
    base) timeout 25 $G/bench_attention_base "$@";;
    cf) timeout 25 $G/bench_attention "$@";;
  esac
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
  echo "chain $tag rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores | listed 512 1024"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="base cf"; else order="cf base"; fi
  for x in $order; do bench $x $r; done
done
for x in base cf cf base base cf; do chain $x; done
rm -f $L/cur.txt
med() {
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in base cf; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
for x in base cf; do
  echo "== trace $x (first process, top-512 score_list distribution)"
  awk '/^== .* r1 /{p=1} /^== .* r2 /{p=0} p' $L/bench_$x.txt | grep -E "^      (score|select) .*\([0-9]\)" | head -10
done
echo "== parity t+$(el)"
P=$L/parity
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/"$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p fp4_long 150 test_backend_ops --filter indexer_fast_fp4 &
( p families 100 test_backend_ops --filter $F; p gpu_model 60 test_gpu_model ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx34_r2_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
