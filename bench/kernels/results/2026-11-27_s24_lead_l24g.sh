#!/usr/bin/env bash
# Session 24 lead, call l24g (H200): the activation lead on wo_a's grouped form (wip/grouped-lead): parity of
# linear_decode_lead (new grouped cases) and linear_decode_grouped, then --grouped-lead-ab (BF16 / NVFP4 / FP8, Flash and
# Pro wo_a, T = 1-8; "default" = the planner, x_lead 0 for grouped calls on main).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24g/l24g.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24g; rm -rf $L; mkdir -p $L
timeout 120 $G/test_backend_ops --filter linear_decode_lead,linear_decode_grouped > $L/parity.txt 2>&1; echo "exit $?" >> $L/parity.txt
echo "parity t=$(el): $(grep -c ' OK' $L/parity.txt) OK, $(grep -c FAIL $L/parity.txt) FAIL; $(tail -2 $L/parity.txt | tr '\n' ' ')"; grep FAIL $L/parity.txt | head -5 | cut -c1-250
timeout 200 $G/bench_linear_gemm --grouped-lead-ab > $L/glead.txt 2>&1; echo "exit $?" >> $L/glead.txt
echo "glead t=$(el)"; grep -E "ceiling|^lead" $L/glead.txt | sed 's/ (+[0-9.]*%)//g' | cut -c1-330
tar czf $OUT/l24g_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
