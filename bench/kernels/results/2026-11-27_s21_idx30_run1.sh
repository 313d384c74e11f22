#!/usr/bin/env bash
# IDX30 (session 21) device call 1: the score tail's histogram REDs (plan.list_flush_rank).
# A/B of main 462a085's bench_attention (build-final, _base) vs wip/idx30's, --indexer-plan-only
# --indexer-trace (top-512 and top-1024), configs alternated (order reversed every other round):
#   main: base binary; n: the branch's plan (m = min(k, 4 ceil(k/ctas) + 8): 16 at top-512, 24 at
#   top-1024); a: DSV4_IDX30_RANK=0 (every fine bin before the snapshot: main's REDs in the new
#   code); k: rank 512 (m = k at top-512: no second flush needed); r1: rank 1 (~1 fine bin before
#   the snapshot, the rest of [L, cut) after it); z: DSV4_IDX30_NOFINE=1 (diag: no fine REDs at all,
#   results wrong: times the score kernel's stages only).
# Then --indexer-chain per config, then parity in parallel (list family incl. the new flush cases,
# three + pack, indexer_fast + _fp8, indexer_fast_fp4, test_gpu_model).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx30/idx30_r1.tar.xz
G=build-gpu-idx30; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx30_logs; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')| $(grep -E 'listed candidates' $f | awk 'NR%2==1{printf "L%s ", $3}')"
}
run_cfg() {  # tag args...
  local tag=$1; shift
  case $tag in
    main) timeout 25 $G/bench_attention_base "$@";;
    n) timeout 25 $G/bench_attention "$@";;
    a) DSV4_IDX30_RANK=0 timeout 25 $G/bench_attention "$@";;
    k) DSV4_IDX30_RANK=512 timeout 25 $G/bench_attention "$@";;
    r1) DSV4_IDX30_RANK=1 timeout 25 $G/bench_attention "$@";;
    z) DSV4_IDX30_NOFINE=1 timeout 25 $G/bench_attention "$@";;
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
  echo "chain $tag rc$rc t+$(el) $(grep -E 'per call' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ')"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores | listed (score_list) 512 1024"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="main n a k r1 z"; else order="z r1 k a n main"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 40 ] || break
done
for x in main n a r1 r1 a n main; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its plan rows ("fp4 plan" and "fp4 plan again") at top-k
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
# Trace: per process, the score_list trace's distribution rows (first / median / last CTA) of
# top-512 (the first score_list trace block of each process); medians over processes.
tr() {  # tag stamp-regex column(2 first,3 median,4 last) k
  awk -v k="top_k=$4" -v re="$2" -v col=$3 '
    /^indexer phase trace/ {blk = index($0, k) > 0; sl = 0}
    /trace score_list/ {sl = blk}
    /trace collect launch/ {sl = 0}
    sl && $0 ~ re {n = split($0, a, "  +"); print a[n - 4 + col]}' $L/bench_$1.txt | sort -n |
    awk '{v[NR]=$1} END {printf "%s", NR ? v[int((NR+1)/2)] : "-"}'
}
for x in main n a k r1 z; do
  echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"
  for k in 512 1024; do
    s="  trace $x top-$k (first/med/last):"
    for st in "score loop end \\(1\\)" "score flush issued \\(7\\)" "score snapshot ok \\(3\\)" "score listed \\(4\\)" "score end \\(2\\)" "select wait done \\(1\\)" "select end \\(4\\)"; do
      s="$s | ${st%% \\(*}$(echo "$st" | grep -o '[0-9]') $(tr $x "$st" 2 $k)/$(tr $x "$st" 3 $k)/$(tr $x "$st" 4 $k)"
    done
    echo "$s"
  done
done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 168 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p list --filter indexer_fast_fp4_list &
p three_pack --filter indexer_fast_fp4_three,indexer_fp4_pack &
p fast_fp8 --filter indexer_fast,indexer_fast_fp8 &
p fp4_long --filter indexer_fast_fp4 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-240; done
grep -h "flush" $P/list.txt | cut -c1-220
tar czf $OUT/idx30_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
