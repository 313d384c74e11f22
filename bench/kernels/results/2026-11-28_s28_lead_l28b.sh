#!/usr/bin/env bash
# Session 28 lead, call l28b: DSV4_HC_GATES_APART 0 / 1 / 2 (2: also joined at the next side-branch join) x 3
# rounds in one process, two processes (test_gpu_model --only-repacked).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l28b/l28b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l28b; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l28b_logs.tgz -C $L . 2>/dev/null; }
for r in 1 2; do
timeout 120 $G/test_gpu_model --only-repacked > $L/e2e_r$r.txt 2>&1; echo "exit $?" >> $L/e2e_r$r.txt
echo "== e2e r$r t=$(el): $(tail -2 $L/e2e_r$r.txt | tr '\n' ' ')"; grep -E "FAIL|gpu-hc-gates|side-branches.*decode" $L/e2e_r$r.txt | grep -E "FAIL|decode" | cut -c1-250; save
done
echo "done t=$(el)"
