#!/usr/bin/env bash
# MOE24 (session 20) verification call for the lead (NOT run by the helper: its two calls were used).
# wip/moe24 974481f (final form: quantize_h_block by integer steps, W2's readiness acquire without
# fence.sc) vs main b6cea3f's bench_moe_linear, single-configuration processes (the default chain,
# C = s0x4.2.4hwlpfgmc = 383 in both), alternating base/new, 3 rounds each, T = 1 / 4 / 16 / 64,
# Flash / Pro, MXFP4 / NVFP4; then parity (the official-order families, whose fold / quantize launch
# now use the integer FP8 step; chain families bit-equal to chain 0) and test_gpu_model, in parallel.
# Staged: /work/main/.bin/moe24/moe24_r3.tar.xz (+ this script as moe24_r3.sh); call:
#   run(command="bash .bin/moe24/moe24_r3.sh", carry=[".bin/moe24", ".deps"], timeout_s=280)
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/moe24/moe24_r3.tar.xz
G=build-gpu-moe24; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/moe24_logs; rm -rf $L; mkdir -p $L/parity
C=s0x4.2.4hwlpfgmc
AB="--decode-ab --ab-official --formats mxfp4,nvfp4 --tokens 1,4,16,64 --replays 15 --ab $C"
bm() {  # tag bin
  echo "== $1 t+$(el)" >> $L/bench_$1.txt
  timeout 30 $G/$2 $AB > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$1.txt
  echo "## $1 rc=$rc t+$(el) $(grep -E 'hbm read-only kernel  4096' $L/cur.txt | awk '{print $(NF-1)}') GB/s"
  awk '/rp official/{printf "%s %s T=%s %s %s;",$1,$2,$7,$9,$11}' $L/cur.txt; echo
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for x in $order; do [ $x = base ] && bm base bench_moe_linear_base || bm new bench_moe_linear; done
  [ $(el) -lt 80 ] || break
done
python3 - $L <<'PY'
import sys, collections, statistics
L = sys.argv[1]; rows = collections.defaultdict(lambda: collections.defaultdict(list))
for tag in ("base", "new"):
    for l in open(f"{L}/bench_{tag}.txt"):
        if "rp official" in l:
            f = l.split(); rows[(f[0], f[1], int(f[6]))][tag].append((float(f[8]), f[10]))
for k in sorted(rows, key=lambda k: (k[0], k[1], k[2])):
    b = [v for v, _ in rows[k]["base"]]; n = [v for v, _ in rows[k]["new"]]
    if b and n:
        print(f"{k[0]} {k[1]} T={k[2]}: base {'/'.join('%.2f' % v for v in b)} us, new {'/'.join('%.2f' % v for v in n)} us, "
              f"median speed {statistics.median(b) / statistics.median(n):.3f}x; %read base {'/'.join(p for _, p in rows[k]['base'])} new {'/'.join(p for _, p in rows[k]['new'])}")
PY
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 100 ] && lim=100; [ $lim -lt 40 ] && lim=40
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p orp --filter moe_decode_official_repacked &
p official --filter moe_decode_official --per-op 14 &
p chains --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked_chain127,moe_decode_official_repacked_chain31,moe_decode_official_repacked_chain255 &
p xs_rp --filter moe_decode_official_repacked_xs,moe_decode_repacked,moe_decode_official_repacked_rt2 --per-op 8 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-220; done
rm -f $L/cur.txt
tar czf $OUT/moe24_r3_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
