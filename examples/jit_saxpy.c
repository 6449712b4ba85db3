/* jit_saxpy.c — the C host API in one page: build a kernel from UOps text,
 * compile it for this CPU, run it on our own arrays, dump its IR and PTX.
 * Built and run by the tests (test/CMakeLists.txt: example_jit_saxpy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uopjit/uopjit.h>

/* y[i] = a * x[i] + y[i] for i < n */
static const char *saxpy =
    "%i = (RANGE loop 0 (DEFINE_VAR:int32 n 0 1000000))\n"
    "%y = (INDEX (PARAM:float32* 1) %i)\n"
    "(SINK (END %i (STORE %y (MULACC (PARAM:float32 2) (LOAD (INDEX (PARAM:float32* 0) %i)) (LOAD %y)))))\n";

int main(void) {
  uj_ctx *ctx = uj_ctx_new();
  const uj_uop *kernel = uj_parse(ctx, saxpy, "saxpy");
  uj_program *prog = kernel ? uj_compile(ctx, kernel, "saxpy") : NULL;
  if (!prog) {
    fprintf(stderr, "error: %s\n", uj_error(ctx));
    uj_ctx_free(ctx);
    return 1;
  }
  float x[8], y[8], a = 2.0f;
  for (int i = 0; i < 8; i++) x[i] = (float)i, y[i] = 1.0f;
  void *args[3] = {x, y, &a}; /* one per PARAM slot: buffers, or a value's address */
  int64_t n = 8;              /* the variables, sorted by name: just n */
  if (uj_run(prog, args, 3, &n, 1) != UJ_OK) fprintf(stderr, "error: %s\n", uj_error(ctx));
  for (int i = 0; i < 8; i++) printf("%g ", y[i]);
  printf("\n");
  char *ir = uj_emit(ctx, kernel, UJ_EMIT_IR_OPT, NULL, NULL);
  char *ptx = uj_emit(ctx, kernel, UJ_EMIT_PTX, "sm_90", NULL);
  printf("optimized IR: %zu bytes, PTX: %zu bytes\n", ir ? strlen(ir) : 0, ptx ? strlen(ptx) : 0);
  free(ir);
  free(ptx);
  uj_program_free(prog);
  uj_ctx_free(ctx);
  return 0;
}
