#!/usr/bin/env bash
# IDX32 (session 21) device call 2 (prepared for the lead; not run by IDX32): the score_list
# listing with one count atomicAdd per warp for all its rounds (wip/idx32-append).
# Binaries: base = main 887a1c9's bench_attention (/work/main/build-cuda); new = wip/idx32-append's.
# 1. base / new --indexer-plan-only --indexer-trace, 4 rounds, order reversed every other round;
#    --indexer-chain base new new base.
# 2. parity in parallel: the five families, indexer_fast_fp4, test_gpu_model (one process each).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx32/idx32_r2.tar.xz
G=build-gpu-idx32; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx32_logs2; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')| $(grep -E 'listed candidates' $f | awk 'NR%2==1{printf "L%s ", $3}')"
}
run_cfg() {  # tag args...
  local tag=$1; shift
  case $tag in
    base) timeout 25 $G/bench_attention_base "$@";;
    new) timeout 25 $G/bench_attention "$@";;
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
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for x in $order; do bench $x $r; done
done
for x in base new new base; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in base new; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
for x in base new; do
  echo "== trace $x (top-512 score_list, every process)"
  awk '/^== /{hdr=$0} /^indexer phase trace/ {blk = index($0, "top_k=512:") > 0} blk && /trace score_list/ {s=1; print hdr} blk && /trace collect launch/ {s=0} s' $L/bench_$x.txt | grep -E "^== |\(1\)|\(7\)|\(3\)|\(4\)|\(2\)|loop end   |flush issued  |snapshot ok  |listed   |^      end  " | grep -v "select entry\|score entry"
done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 172 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
echo "parity limit ${lim}s"
p() { local tag=$1 bin=$2; shift 2; timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p fp4_long test_backend_ops --filter indexer_fast_fp4 &
p families test_backend_ops --filter $F &
p gpu_model test_gpu_model &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx32_r2_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
