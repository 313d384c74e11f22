#!/usr/bin/env bash
# IDX34 (session 22) device call 1: score_list_keys' snapshot -> bound (indexer T=1 x 256K FP4 keys).
# Binaries: base = main 082824a's bench_attention (/work/main/build-cuda); new = wip/idx34 (warp 0
# reads and scans the coarse snapshot, loads the fine bins, one barrier; main's order and sleep);
# diag = wip/idx34-variants with DSV4_IDX34_MODE (read at the first plan; score_list_keys only; the
# fine flush moved into score_list_keys in every mode):
#   d0 main's code; d1-d3 warp 0's scan, sleep 256 / 64 / 0 ns; d4 coarse adds before the fine
#   flush (a barrier, the snapshot load, then the fine flush), block scan; d5-d6 the same with warp
#   0's scan, sleep 256 / 64; d7 coarse first without the barrier, warp scan, sleep 64.
# 1. --indexer-plan-only --indexer-trace, 3 rounds, order reversed every other round;
#    --indexer-chain 2 processes per config (forward, then reversed).
# 2. parity in parallel: new (five families, indexer_fast_fp4 150 s, test_gpu_model: one process),
#    diag modes 1 3 4 5 7 (five families).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx34/idx34_r1.tar.xz
G=build-gpu-idx34; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx34_logs; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')| $(grep -E 'listed candidates' $f | awk 'NR%2==1{printf "L%s ", $3}')| $(grep -E 'list snapshot tries' $f | head -1 | sed -E 's/.*median CTA ([0-9.]+), max CTA ([0-9.]+)/tries \1 \2/')"
}
run_cfg() {  # tag args...
  local tag=$1; shift
  case $tag in
    base) timeout 25 $G/bench_attention_base "$@";;
    new) timeout 25 $G/bench_attention "$@";;
    d*) DSV4_IDX34_MODE=${tag#d} timeout 25 $G/bench_attention_diag "$@";;
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
CF="base new d0 d1 d2 d3 d4 d5 d6 d7"
RF="d7 d6 d5 d4 d3 d2 d1 d0 new base"
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores | listed 512 1024 | tries median max"
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order=$CF; else order=$RF; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 50 ] || break
done
for x in $CF; do chain $x; done
[ $(el) -lt 80 ] && for x in $RF; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in $CF; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
for x in base new d0 d1 d5; do
  echo "== trace $x (first process, top-512 score_list)"
  awk '/^== .* r1 /{p=1} /^== .* r2 /{p=0} p' $L/bench_$x.txt | awk '/^indexer phase trace/ {blk = index($0, "top_k=512 ") > 0} blk && /trace score_list/ {s=1} blk && /trace collect launch/ {s=0} s' | grep -E "\(7\)|\(3\)|\(4\)|\(2\)|select|tries|ends last|loop end  |flush issued  |snapshot ok  |listed  " | head -24
done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 150 ] && lim=150; [ $lim -lt 40 ] && lim=40
echo "parity limit ${lim}s"
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
pn() { local tag=$1; shift; timeout $lim $G/"$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
pd() { local tag=$1 mode=$2; shift 2; DSV4_IDX34_MODE=$mode timeout $lim $G/"$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
pn new_fp4_long test_backend_ops --filter indexer_fast_fp4 &
pn new_families test_backend_ops --filter $F &
pn new_gpu_model test_gpu_model &
for m in 1 3 4 5 7; do pd d${m}_families $m test_backend_ops_diag --filter $F & done
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx34_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
