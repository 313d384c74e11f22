#!/usr/bin/env bash
# Session 24 lead, call l24l (H200): W8A8's activation lead at two n-tiles (9-16 tokens; wip/w8a8-nt2): parity of the fp8act
# families (new two-n-tile lead cases), then --w8a8-xlead 2 (T = 1-16; at 9 / 16 "default" = x_lead 0).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l24l/l24l.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l24l; rm -rf $L; mkdir -p $L
timeout 150 $G/test_backend_ops --filter linear_decode_fp8act,linear_decode_fp8act_plans > $L/parity.txt 2>&1; echo "exit $?" >> $L/parity.txt
echo "parity t=$(el): $(grep -c ' OK' $L/parity.txt) OK, $(grep -c FAIL $L/parity.txt) FAIL; $(tail -2 $L/parity.txt | tr '\n' ' ')"; grep FAIL $L/parity.txt | head -5 | cut -c1-250
timeout 200 $G/bench_linear_gemm --w8a8-xlead 2 > $L/xlead.txt 2>&1; echo "exit $?" >> $L/xlead.txt
echo "xlead t=$(el)"; grep -E "ceiling|T=(9|16) " $L/xlead.txt | cut -c1-330
tar czf $OUT/l24l_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
