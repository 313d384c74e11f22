#!/usr/bin/env bash
# Session 27 lead, call l27a: side branches (up to 4 open at once). test_gpu_model --only-repacked (new: includes
# gpu-side-branches, 1/2/3/4 branches bitwise + step times in one process), base --only-repacked, new again;
# then the official_format fixture (oracle + graph decode) with the default 4 branches.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l27a/l27a.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l27a; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/l27a_logs.tgz -C $L . 2>/dev/null; }
run() { timeout $3 $G/$1 ${@:4} > $L/$2.txt 2>&1; echo "exit $?" >> $L/$2.txt; echo "== $2 t=$(el): $(tail -2 $L/$2.txt | tr '\n' ' ')"; grep -E "FAIL|side-branches|decode step" $L/$2.txt | cut -c1-330; save; }
run test_gpu_model new_r1 150 --only-repacked
run test_gpu_model_base base_r1 90 --only-repacked
run test_gpu_model new_r2 150 --only-repacked
run test_gpu_model fixture_official 150 --only official_format
echo "done t=$(el)"
