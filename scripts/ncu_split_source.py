# Usage: python3 scripts/ncu_split_source.py src.csv PREFIX
# Splits an ncu source-page CSV holding several profiled kernels (one header row each) into
# PREFIX_k<N>.csv, one file per kernel, for scripts/ncu_source_top.py (MOE18, session 14).
import sys
lines = open(sys.argv[1], errors="replace").read().splitlines(keepends=True)
heads = [i for i, l in enumerate(lines) if l.startswith('"Address","Source"') or l.startswith('"Source"')]
print("kernels in", sys.argv[1], len(heads))
for n, h in enumerate(heads):
    end = heads[n + 1] if n + 1 < len(heads) else len(lines)
    # the kernel-name line(s) before the header, if any, stay with the previous part: harmless
    open(f"{sys.argv[2]}_k{n}.csv", "w").writelines(lines[h:end])
