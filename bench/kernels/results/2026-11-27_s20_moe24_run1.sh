#!/usr/bin/env bash
# MOE24 (session 20) device call 1: routed-MoE decode T = 1 structure. Chain 512 ("y": one-pair
# chunks at T = 1 without the fold; each W1/W3 block releases its slot, W2 quantizes hf itself)
# and 1024 ("o": W2's poll backoff <= 64 ns). A/B main b6cea3f's bench_moe_linear (_base) vs
# wip/moe24's (configs C = 383, Cy = 895, Cyo = 1919), alternating, T = 1 / 4; trace (DSV4_MOE_TRACE
# builds of both) Flash / Pro MXFP4 T = 1; then parity (new chain cases bit-equal to chain 0 and
# the default families under the new default 895), all groups in parallel.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/moe24/moe24_r1.tar.xz
G=build-gpu-moe24; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/moe24_logs; rm -rf $L; mkdir -p $L/parity
C=s0x4.2.4hwlpfgmc
AB="--decode-ab --ab-official --formats mxfp4,nvfp4 --tokens 1,4 --replays 15"
bm() {  # tag bin configs limit
  local tag=$1 bin=$2 cfg=$3 lim=$4
  echo "== $tag t+$(el) $cfg" >> $L/bench_$tag.txt
  timeout $lim $G/$bin $AB --ab $cfg > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "## $tag rc=$rc t+$(el) $(grep -E 'hbm read-only kernel  4096' $L/cur.txt | awk '{print $(NF-1)}') GB/s"
  awk '/rp official/{printf "%s %s T=%s %s %s %s\n",$1,$2,$7,$5,$9,$11} /speed vs/{print}' $L/cur.txt
}
bm base bench_moe_linear_base $C 30
bm ours bench_moe_linear "$C,${C}y,${C}yo" 45
bm base bench_moe_linear_base $C 30
bm ours bench_moe_linear "${C}yo,${C}y,$C" 45
TR="--decode-ab --ab-official --formats mxfp4 --tokens 1 --replays 3"
trc() {  # tag bin configs limit
  timeout $4 $G/$2 $TR --ab $3 > $L/trace_$1.txt 2>&1; echo "## trace $1 rc=$? t+$(el)"
  awk '/^trace/{p=($0 ~ /call [01]:/)} p' $L/trace_$1.txt | sed -E 's/ +/ /g' | cut -c1-260
}
[ $(el) -lt 120 ] && trc base bench_moe_linear_trace_base $C 25
[ $(el) -lt 135 ] && trc ours bench_moe_linear_trace "$C,${C}y,${C}yo" 35
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 192 - $(el) )); [ $lim -gt 90 ] && lim=90; [ $lim -lt 35 ] && lim=35
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p c895 --filter moe_decode_official_repacked_chain895 &
p c1919_xs --filter moe_decode_official_repacked_chain1919,moe_decode_official_repacked_xs &
p def_orp --filter moe_decode_official_repacked &
p def_c383_rp --filter moe_decode_official_repacked_chain383,moe_decode_repacked,moe_decode_official_repacked_rt2 --per-op 5 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-220; done
rm -f $L/cur.txt
tar czf $OUT/moe24_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
