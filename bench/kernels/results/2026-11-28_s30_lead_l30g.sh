#!/usr/bin/env bash
# Session 30 lead, call l30g (H200): scripts/diag/cublas_workspace_speed.cu (built here into .bin/diag, see its header):
# cuBLAS with its internal pool vs a 32 MiB workspace bound after cublasSetStream, Flash projection shapes, 3-4096 tokens.
nvidia-smi -L; timeout -s KILL 120 .bin/diag/cublas_workspace_speed
