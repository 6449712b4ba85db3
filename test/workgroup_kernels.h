/* workgroup_kernels.h — kernels made of workgroups, as text, shared by
 * test_eval_workgroup (run by the evaluator) and test_gpu_emit (emitted
 * for the GPUs): a row sum by 256 threads with a tree in local memory,
 * and a GEMM with shared-memory tiles, each with a BARRIER that can be
 * left out; a LOAD read again after a BARRIER. */
#ifndef UJ_TEST_WORKGROUP_KERNELS_H
#define UJ_TEST_WORKGROUP_KERNELS_H

#include <stdbool.h>
#include <stdio.h>

enum { ROWS = 3, COLS = 1024, THREADS = 256 };

/* The row-sum kernel; `skip`: the BARRIER left out (-1: none; 0 after
 * the partial sums, 1 + s after tree step s). */
static inline const char *row_sum_text(int skip) {
  static char buf[8192];
  size_t n = (size_t)snprintf(buf, sizeof buf,
                              "%%s = (ALLOC:float32*local 0 %d)\n"
                              "%%g = (RANGE global 0 (CONST:int32 %d))\n%%l = (RANGE local 1 (CONST:int32 %d))\n"
                              "%%k = (RANGE reduce 2 (CONST:int32 %d))\n"
                              "%%p = (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%g (CONST:int32 %d)) "
                              "(ADD (MUL %%k (CONST:int32 %d)) %%l)))) %%k)\n"
                              "(SINK (END %%g (END %%l (STORE (INDEX %%s %%l) %%p) %s\n",
                              THREADS, ROWS, THREADS, COLS / THREADS, COLS, THREADS, skip == 0 ? "" : "(BARRIER)");
  int step = 0;
  for (int stride = THREADS / 2; stride >= 1; stride /= 2, step++) {
    char gate[64];
    snprintf(gate, sizeof gate, "(CMPLT %%l (CONST:int32 %d))", stride);
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "  (STORE (INDEX %%s %%l %s) (ADD (LOAD (INDEX %%s %%l %s)) "
                          "(LOAD (INDEX %%s (ADD %%l (CONST:int32 %d)) %s)))) %s\n",
                          gate, gate, stride, gate, skip == step + 1 ? "" : "(BARRIER)");
  }
  snprintf(buf + n, sizeof buf - n,
           "  (STORE (INDEX (PARAM:float32* 0) %%g (CMPEQ %%l (CONST:int32 0))) "
           "(LOAD (INDEX %%s (CONST:int32 0) (CMPEQ %%l (CONST:int32 0))))))))");
  return buf;
}

enum { M = 16, N = 16, K = 32, TILE = 8 };

/* C = A B: workgroups of 8 x 8 threads, one output each; per k tile the
 * group copies an 8 x 8 tile of A and of B to local memory, waits, and
 * each thread adds its row by column to an accumulator in `reg` memory;
 * `second`: the BARRIER before the next tile's copy. */
static inline const char *gemm_text(bool second) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "%%as = (ALLOC:float32*local 0 64)\n%%bs = (ALLOC:float32*local 1 64)\n%%acc = (ALLOC:float32*reg 2 1)\n"
           "%%i = (RANGE global 0 (CONST:int32 %d))\n%%j = (RANGE global 1 (CONST:int32 %d))\n"
           "%%y = (RANGE local 2 (CONST:int32 8))\n%%x = (RANGE local 3 (CONST:int32 8))\n"
           "%%t = (RANGE loop 4 (CONST:int32 %d))\n%%q = (RANGE reduce 5 (CONST:int32 8))\n"
           "%%row = (ADD (MUL %%i (CONST:int32 8)) %%y)\n%%col = (ADD (MUL %%j (CONST:int32 8)) %%x)\n"
           "%%at = (ADD (MUL %%y (CONST:int32 8)) %%x)\n%%a0 = (INDEX %%acc (CONST:int32 0))\n"
           "(SINK (END %%i (END %%j (END %%y (END %%x\n"
           "  (STORE %%a0 (CONST:float32 0.0))\n"
           "  (END %%t\n"
           "    (STORE (INDEX %%as %%at) (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%row (CONST:int32 %d)) "
           "(ADD (MUL %%t (CONST:int32 8)) %%x)))))\n"
           "    (STORE (INDEX %%bs %%at) (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL (ADD (MUL %%t (CONST:int32 8)) %%y) "
           "(CONST:int32 %d)) %%col))))\n"
           "    (BARRIER)\n"
           "    (STORE %%a0 (ADD (LOAD %%a0) (REDUCE ADD (MUL (LOAD (INDEX %%as (ADD (MUL %%y (CONST:int32 8)) %%q))) "
           "(LOAD (INDEX %%bs (ADD (MUL %%q (CONST:int32 8)) %%x)))) %%q)))\n"
           "    %s)\n"
           "  (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %%row (CONST:int32 %d)) %%col)) (LOAD %%a0)))))))",
           M / TILE, N / TILE, K / TILE, K, N, second ? "(BARRIER)" : "", N);
  return buf;
}

/* One LOAD node read after each of two BARRIERs, thread 1 storing there
 * between them: out[l] = 1 then out[4 + l] = 2 (values after a BARRIER
 * are computed after it). */
static inline const char *reload_text(void) {
  return "%s = (ALLOC:int32*local 0 4)\n%l = (RANGE local 0 (CONST:int32 4))\n"
         "%x = (LOAD (INDEX %s (CONST:int32 0)))\n"
         "(SINK (END %l (STORE (INDEX %s (CONST:int32 0) (CMPEQ %l (CONST:int32 0))) (CONST:int32 1)) (BARRIER)"
         " (STORE (INDEX (PARAM:int32* 0) %l) %x) (BARRIER)"
         " (STORE (INDEX %s (CONST:int32 0) (CMPEQ %l (CONST:int32 1))) (CONST:int32 2)) (BARRIER)"
         " (STORE (INDEX (PARAM:int32* 0) (ADD %l (CONST:int32 4))) %x)))";
}

#endif
