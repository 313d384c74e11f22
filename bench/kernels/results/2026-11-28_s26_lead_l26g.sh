#!/usr/bin/env bash
# Session 26 lead, call l26g: the final tree (lead-s26 after the second-round helpers' merges): parity of the families
# changed since l26e / l26f (rms_norm_rope + rms_norm + rope; the helpers' families, FILTER_EXTRA) | the full
# test_gpu_model; then the decode step: main a153b30 (base, l26e's tree) / new / new with DSV4_NORM_ROPE_FUSE=0 / new
# with DSV4_FP8ACT_IN_GEMM=1, two rounds.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l26g/l26g.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l26g; rm -rf $L; mkdir -p $L/e2e $L/parity
P=$L/parity; save() { tar czf $OUT/l26g_logs.tgz -C $L . 2>/dev/null; }
FILTER="rms_norm_rope,rms_norm,rope$(cat $G/filter_extra.txt 2>/dev/null)"
( timeout 150 $G/test_backend_ops --filter $FILTER > $P/ops.txt 2>&1; echo "exit $?" >> $P/ops.txt ) &
( timeout 150 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep -E "FAIL" $f | head -8 | cut -c1-220; done
awk '{print $1}' $P/ops.txt | sort | uniq -c | grep -v "exit\|test_backend" | tr '\n' ' '; echo
echo "parity t=$(el)"; save
for r in 1 2; do for b in base new nofuse ingemm; do
  bin=$G/test_gpu_model; [ $b = base ] && bin=$G/test_gpu_model_base
  case $b in
    nofuse) DSV4_NORM_ROPE_FUSE=0 timeout 60 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1 ;;
    ingemm) DSV4_FP8ACT_IN_GEMM=1 timeout 60 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1 ;;
    *) timeout 60 $bin --only-repacked > $L/e2e/${b}_r$r.txt 2>&1 ;;
  esac
  echo "exit $?" >> $L/e2e/${b}_r$r.txt
  echo "e2e $b r$r t=$(el): $(grep -E 'decode step' $L/e2e/${b}_r$r.txt | sed 's/.*(batch \([0-9]\), graph, median of [0-9]*): /b\1 /' | tr '\n' ';' | cut -c1-400) $(tail -1 $L/e2e/${b}_r$r.txt)"
done; done
save; echo "done t=$(el)"
