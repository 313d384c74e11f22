# Device side of a call packed by scripts/device_pack.sh; source it from the repository root with
# N set. Unpacks .bin/N/N.tar.xz into G=build-gpu (LD_LIBRARY_PATH to its lib/), prints
# commit.txt, and defines L=/tmp/N (the logs), el (seconds since this point) and save (L as
# $OUT/N_logs.tgz, what comes back).
: "${N:?set N before sourcing device_call_prelude.sh}"
G=build-gpu
rm -rf "$G" && mkdir -p "$G" &&
  python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' ".bin/$N/$N.tar.xz" "$G"
cat "$G/commit.txt"
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
L=/tmp/$N
rm -rf "$L" && mkdir -p "$L"
save() { tar czf "$OUT/${N}_logs.tgz" -C "$L" . 2>/dev/null; }
