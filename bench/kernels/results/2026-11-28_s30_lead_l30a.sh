#!/usr/bin/env bash
# Session 30 lead, call l30a (H200): scripts/diag/cublas_stream_race.cu, built here with
#   nvcc -O2 -arch=sm_90a -std=c++17 scripts/diag/cublas_stream_race.cu -lcublas -o .bin/diag/cublas_stream_race
# (carry .bin/diag): decode-shaped cuBLAS GEMMs on two concurrent streams through one handle vs one at a time.
nvidia-smi -L; for n in 3 2 1 8; do timeout -s KILL 60 .bin/diag/cublas_stream_race $n 400; done; timeout -s KILL 60 .bin/diag/cublas_stream_race 3 2000
