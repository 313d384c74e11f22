#!/usr/bin/env bash
# MOE24 (session 20) device call 2. Chain bits (A/B, all with 383 = C): 512 "y" (T = 1: one-pair
# chunks without the fold, W2 quantizes hf itself; call 1: 0.89-0.92x), 1024 "a" (W2's readiness
# poll by acquire loads, no fence.sc after it), 4096 "b" (relaxed polls, then one acquire load, no
# fence), 2048 "z" (the fold's FP8 step by integer steps,
# same values). main b6cea3f's bench_moe_linear (_base) vs wip/moe24's, alternating, 3 rounds,
# T = 1 / 4 / 16 / 64, Flash / Pro, MXFP4 / NVFP4; trace (DSV4_MOE_TRACE builds) Flash / Pro MXFP4
# T = 1 (main's path: the C configuration of the trace build; call 1 traced main's own build too); parity (new chain cases bit-equal to chain 0; default families; test_gpu_model at the
# default chain, at 3455 = C + a + z, 6527 = C + b + z and 3967 = C + y + a + z) in parallel.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/moe24/moe24_r2.tar.xz
G=build-gpu-moe24; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/moe24_logs; rm -rf $L; mkdir -p $L/parity
C=s0x4.2.4hwlpfgmc
AB="--decode-ab --ab-official --formats mxfp4,nvfp4 --tokens 1,4,16,64 --replays 15"
bm() {  # tag bin configs limit
  local tag=$1 bin=$2 cfg=$3 lim=$4
  echo "== $tag t+$(el) $cfg" >> $L/bench_$tag.txt
  timeout $lim $G/$bin $AB --ab $cfg > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "## $tag rc=$rc t+$(el) $(grep -E 'hbm read-only kernel  4096' $L/cur.txt | awk '{print $(NF-1)}') GB/s"
  awk '/rp official/{printf "%s %s T=%s %s %s %s\n",$1,$2,$7,$5,$9,$11}' $L/cur.txt | tr '\n' ';' | sed 's/s0x4.2.4hwlpfgm//g'; echo
  grep "speed vs" $L/cur.txt | sed -E 's/ +/ /g; s/s0x4.2.4hwlpfgm//g'
}
bm base bench_moe_linear_base $C 30
bm ours bench_moe_linear "$C,${C}a,${C}b,${C}z,${C}az,${C}bz,${C}yaz" 60
bm base bench_moe_linear_base $C 30
bm ours bench_moe_linear "${C}yaz,${C}bz,${C}az,${C}z,${C}b,${C}a,$C" 60
bm base bench_moe_linear_base $C 30
[ $(el) -lt 110 ] && bm ours bench_moe_linear "${C}bz,$C,${C}yaz,${C}az,${C}a,${C}z,${C}b" 60
TR="--decode-ab --ab-official --formats mxfp4 --tokens 1 --replays 3"
trc() {  # tag bin configs limit
  timeout $4 $G/$2 $TR --ab $3 > $L/trace_$1.txt 2>&1; echo "## trace $1 rc=$? t+$(el)"
  awk '/^trace/{p=($0 ~ /call 0:/)} p' $L/trace_$1.txt | sed -E 's/ +/ /g; s/s0x4.2.4hwlpfgm//g; s/per-SM last exit.*//' | cut -c1-200
}
[ $(el) -lt 130 ] && trc ours bench_moe_linear_trace "$C,${C}a,${C}b,${C}z,${C}bz,${C}yaz" 30
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 192 - $(el) )); [ $lim -gt 100 ] && lim=100; [ $lim -lt 35 ] && lim=35
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p c1407_2431 --filter moe_decode_official_repacked_chain1407,moe_decode_official_repacked_chain2431 &
p c3455_895 --filter moe_decode_official_repacked_chain3455,moe_decode_official_repacked_chain895 &
p c4479_6527 --filter moe_decode_official_repacked_chain4479,moe_decode_official_repacked_chain6527 &
p c3967 --filter moe_decode_official_repacked_chain3967 &
p def_orp --filter moe_decode_official_repacked &
p def_c383_rp_xs --filter moe_decode_official_repacked_chain383,moe_decode_repacked,moe_decode_official_repacked_xs --per-op 7 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
(timeout $lim $G/test_gpu_model --moe-decode-chain 3455 > $P/gpu_model_3455.txt 2>&1; echo "exit $?" >> $P/gpu_model_3455.txt) &
(timeout $lim $G/test_gpu_model --moe-decode-chain 6527 > $P/gpu_model_6527.txt 2>&1; echo "exit $?" >> $P/gpu_model_6527.txt) &
(timeout $lim $G/test_gpu_model --moe-decode-chain 3967 > $P/gpu_model_3967.txt 2>&1; echo "exit $?" >> $P/gpu_model_3967.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-220; done
rm -f $L/cur.txt
tar czf $OUT/moe24_r2_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
