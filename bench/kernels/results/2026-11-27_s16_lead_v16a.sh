#!/usr/bin/env bash
# Session 16 lead: verification of the merged main (a0471b4): PREFILL10's phased ws epilogue
# (default 4-block chunks; parity + A/B vs the old epilogue, --ws-epis 0,4,2, bit check vs the
# wgmma core), PREFILL11's noinc + lean W4A8 consumers (parity at LEAD 0 and 6; bench vs main's
# w4a8 in bench_moe_linear_base, alternating), indexer list cases (IDX14 stamp), test_gpu_model.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/v16a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
(timeout 150 $G/test_gpu_model > $OUT/gpu_model.txt 2>&1; echo "exit $?" >> $OUT/gpu_model.txt) &
m=$!
P=$OUT/parity; mkdir -p $P
run() { local name=$1; shift; timeout 60 $G/test_backend_ops "$@" > $P/$name.txt 2>&1; }
run a_ws_rp --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked --per-op 16 &
run b_ws --filter moe_prefill_wgmma_ws,moe_prefill_official_wgmma_ws --per-op 8 &
run c_w4a8_l0 --filter moe_prefill_official_w4a8_ws --per-op 14 &
DSV4_W4A8_WS_LEAD=6 run d_w4a8_l6 --filter moe_prefill_official_w4a8_ws --per-op 14 &
run e_idx --filter indexer_fast_fp4_list &
wait $(jobs -p | grep -v "^$m$") 2>/dev/null; wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1)"; grep FAIL $f | head -3; done
echo "== gpu_model: $(grep -E 'passed|failed' $OUT/gpu_model.txt | tail -2 | tr '\n' ' ') $(tail -1 $OUT/gpu_model.txt)"
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
B=$G/bench_kernels
timeout 50 $B/bench_moe_linear --ws-epis 0,4,2 --ws-t 1024,4096,8192 --formats mxfp4 > $OUT/epi_mxfp4.txt 2>&1; echo "epi mxfp4 rc=$? t=$(el)"
timeout 45 $B/bench_moe_linear --ws-epis 0,4,2 --ws-t 1024,4096,8192 --formats nvfp4 > $OUT/epi_nvfp4.txt 2>&1; echo "epi nvfp4 rc=$? t=$(el)"
echo "bitcmp lines $(grep -h differ $OUT/epi_*.txt | wc -l), nonzero $(grep -h differ $OUT/epi_*.txt | grep -vc ' 0 of .* 0 unwritten')"; grep -h differ $OUT/epi_*.txt | grep -v ' 0 of .* 0 unwritten' | head -4
grep -h "speed-up\|ceil\|epi. rp p1" $OUT/epi_*.txt | head -40
W="--prefill-w4a8 --w4a8-flash-t 4096,8192 --w4a8-pro-t 4096"
for r in 1 2; do
  timeout 40 $B/bench_moe_linear_base $W > $OUT/w4a8_base$r.txt 2>&1; echo "w4a8 base$r rc=$? t=$(el)"
  timeout 40 $B/bench_moe_linear $W > $OUT/w4a8_new$r.txt 2>&1; echo "w4a8 new$r rc=$? t=$(el)"
done
for f in $OUT/w4a8_*.txt; do echo "## $(basename $f)"; grep -E "w4a8_ws|dense|differ" $f | sed -E 's/ +/ /g' | cut -c1-150 | head -12; done
