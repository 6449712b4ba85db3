/* test_interrupt.c — uj_interrupt (progress.h): with the request set, a
 * realize that computes new tensors stops before its first kernel with
 * "interrupted", and the session goes on once it is withdrawn (the same
 * tensor then computes as it would have); a schedule that writes an
 * existing tensor (an assignment) runs whole even so; a BEAM search with
 * the request set searches nothing and caches nothing (a search stopped
 * midway keeps the heuristics' config the same way: beam.c, search_finish;
 * the prompt test stops a running realize). */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "uopjit/tensor.h"

static void test_realize_stops(uj_session *s) {
  uj_tensor *x = uj_tensor_arange(s, UJ_FLOAT32, 0, 8, 1);
  CHECK(uj_tensor_realize(&x, 1) == UJ_OK, "x: %s", uj_session_error(s));
  uj_tensor *y = uj_tensor_unary(UJ_UN_EXP, uj_tensor_binary_scalar(UJ_BIN_MUL, x, 0.5, false));
  uj_interrupt(true);
  CHECK(uj_tensor_realize(&y, 1) == UJ_ERR_INTERRUPTED, "a realize ran with the request set");
  CHECK(strstr(uj_session_error(s), "interrupted") != NULL, "the error: '%s'", uj_session_error(s));
  uj_interrupt(false);
  uj_session_clear_error(s);
  float got[8];
  CHECK(uj_tensor_to_host(y, got, sizeof got) == UJ_OK, "after the request was withdrawn: %s", uj_session_error(s));
  for (int i = 0; i < 8; i++) CHECK(got[i] > 0.99f * expf(0.5f * (float)i) && got[i] < 1.01f * expf(0.5f * (float)i), "y[%d] = %g", i, got[i]);
  uj_tensor_free(y), uj_tensor_free(x);
}

static void test_assignment_runs_whole(uj_session *s) {
  uj_tensor *w = uj_tensor_zeros(s, UJ_FLOAT32, (int64_t[]){4}, 1);
  CHECK(uj_tensor_realize(&w, 1) == UJ_OK, "w: %s", uj_session_error(s));
  uj_tensor *v = uj_tensor_full(s, UJ_FLOAT32, (int64_t[]){4}, 1, 3.0);
  uj_interrupt(true);
  CHECK(uj_tensor_assign(w, uj_tensor_binary_scalar(UJ_BIN_ADD, v, 1.0, false)) == UJ_OK,
        "an assignment stopped halfway: %s", uj_session_error(s));
  uj_interrupt(false);
  float got[4] = {0};
  CHECK(uj_tensor_to_host(w, got, sizeof got) == UJ_OK && got[0] == 4 && got[3] == 4, "w = %g .. %g", got[0], got[3]);
  uj_tensor_free(v), uj_tensor_free(w);
}

/* UJ_BEAM with the request set: no candidate is timed, nothing is cached,
 * the realize stops; withdrawn, the session computes with the heuristics. */
static void test_beam_stops(void) {
  char dir[] = "/tmp/uj_interrupt_XXXXXX", file[64];
  if (!mkdtemp(dir)) {
    CHECK(false, "mkdtemp");
    return;
  }
  setenv("UJ_CACHE_DIR", dir, 1), setenv("UJ_BEAM", "2", 1), setenv("UJ_CACHE", "0", 1); /* beam.txt only */
  const char *why = NULL;
  uj_session *s = uj_session_new("CPU", &why);
  unsetenv("UJ_BEAM");
  CHECK(s != NULL, "a BEAM session: %s", why ? why : "");
  if (!s) {
    rmdir(dir);
    return;
  }
  uj_tensor *a = uj_tensor_rand(s, (int64_t[]){64, 64}, 2, 1);
  CHECK(uj_tensor_realize(&a, 1) == UJ_OK, "a: %s", uj_session_error(s));
  uj_tensor *p = uj_tensor_matmul(a, a);
  uj_interrupt(true);
  CHECK(uj_tensor_realize(&p, 1) != UJ_OK && strstr(uj_session_error(s), "interrupted"), "a searched realize ran: '%s'",
        uj_session_error(s));
  uj_interrupt(false);
  uj_session_clear_error(s);
  snprintf(file, sizeof file, "%s/beam.txt", dir);
  FILE *f = fopen(file, "r");
  int lines = 0;
  for (int c; f && (c = fgetc(f)) != EOF;) lines += c == '\n';
  if (f) fclose(f);
  CHECK(lines == 0, "an interrupted search was cached: %d lines in %s", lines, file);
  CHECK(uj_tensor_realize(&p, 1) == UJ_OK, "after the request was withdrawn: %s", uj_session_error(s));
  uj_session_free(s);
  remove(file);
  CHECK(rmdir(dir) == 0, "%s holds more than beam.txt", dir);
  unsetenv("UJ_CACHE_DIR"), unsetenv("UJ_CACHE");
}

int main(void) {
  const char *why = NULL;
  uj_session *s = uj_session_new("CPU", &why);
  if (!s) return fprintf(stderr, "no CPU session: %s\n", why), 1;
  test_realize_stops(s);
  test_assignment_runs_whole(s);
  uj_session_free(s);
  test_beam_stops();
  return check_report("test_interrupt");
}
