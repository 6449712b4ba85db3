/* test_beam.c — UJ_BEAM (lib/runtime/beam.c, docs/search.md): kernels
 * realized with the search on compute what naive C computes; the winners
 * land in the cache file, where a second session and a second process
 * find them without compiling or timing anything; the config a cache line
 * holds is the one opt_kernel applies, and malformed lines change
 * nothing; a cache that cannot be read or written only costs the cache;
 * UJ_BEAM unset or 0 touches no file; beam_params reaches exactly the
 * buffers' sizes. Everything under a fresh mkdtemp folder, removed at the
 * end. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setenv, nftw */
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/beam.h"
#include "schedule/rangeify.h"
#include "tensor_util.h"

static const Tol SUMS = {1e-5, 1e-3, false};

static BeamStats session_stats(uj_session *s) { return beam_stats(s->target.opt.search); }

/* A row sum of 64 x 1000, realized in s and checked against naive C (and
 * the evaluator); with `matmul`, a 128 x 128 x 128 matmul too. */
static void realize_graphs(uj_session *s, bool matmul, const char *what) {
  enum { N = 128, ROWS = 64, COLS = 1000 };
  Rng r = {0x9e3779b97f4a7c15ull};
  double *a, *b, *x;
  char name[96];
  if (matmul) {
    uj_tensor *ta = random_f32(s, &r, SHAPE(N, N), -1, 1, false, &a);
    uj_tensor *tb = random_f32(s, &r, SHAPE(N, N), -1, 1, false, &b);
    double *mm = calloc(N * N, sizeof *mm);
    for (int i = 0; i < N; i++)
      for (int k = 0; k < N; k++)
        for (int j = 0; j < N; j++) mm[i * N + j] += a[i * N + k] * b[k * N + j];
    snprintf(name, sizeof name, "%s: matmul", what);
    expect(s, uj_tensor_matmul(ta, tb), SHAPE(N, N), mm, SUMS, name);
    free(a), free(b), free(mm);
  }
  uj_tensor *tx = random_f32(s, &r, SHAPE(ROWS, COLS), -1, 1, false, &x);
  double *sums = calloc(ROWS, sizeof *sums);
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++) sums[i] += x[i * COLS + j];
  snprintf(name, sizeof name, "%s: row sum", what);
  expect(s, uj_tensor_reduce(UJ_RED_SUM, tx, (const int[]){1}, 1, false), SHAPE(ROWS), sums, SUMS, name);
  free(x), free(sums);
}

static uj_session *session(const char *what) {
  const char *error = NULL;
  uj_session *s = uj_session_new("CPU", &error);
  CHECK(s != NULL, "%s: %s", what, error ? error : "");
  return s;
}

static size_t count_lines(const char *path, char *last, size_t size) {
  FILE *f = fopen(path, "r");
  char line[512];
  size_t n = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (last) snprintf(last, size, "%s", line);
    n += strncmp(line, BEAM_CACHE_TAG " ", strlen(BEAM_CACHE_TAG) + 1) == 0;
  }
  if (f) fclose(f);
  return n;
}

static void append(const char *path, const char *text) {
  FILE *f = fopen(path, "a");
  CHECK(f != NULL, "cannot append to %s", path);
  if (f) fputs(text, f), fclose(f);
}

static size_t dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  size_t n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  if (d) closedir(d);
  return n;
}

/* ---- the cache, through sessions and processes ---- */

static void test_first_session(const char *file) {
  uj_session *s = session("first session");
  if (!s) return;
  CHECK(s->target.opt.search != NULL, "UJ_BEAM=2: the session has a search");
  CHECK_STR(beam_cache_path(s->target.opt.search), file, "the cache file is $UJ_CACHE_DIR/beam.txt");
  realize_graphs(s, true, "first session");
  BeamStats st = session_stats(s);
  CHECK(st.searched >= 2 && st.hits == 0, "searched %zu kernels, %zu hits: want >= 2, 0", st.searched, st.hits);
  CHECK(st.compiled >= st.searched && st.timed >= st.searched, "compiled %zu, timed %zu for %zu kernels", st.compiled,
        st.timed, st.searched);
  CHECK(st.stored == st.searched, "stored %zu of %zu", st.stored, st.searched);
  size_t lines = count_lines(file, NULL, 0);
  CHECK(lines == st.stored, "the cache file has %zu lines, want %zu", lines, st.stored);
  uj_session_free(s);
}

/* The entries in the file: every kernel found, nothing compiled or timed. */
static bool all_cached(uj_session *s, const char *what) {
  BeamStats st = session_stats(s);
  CHECK(st.kernels >= 2 && st.hits == st.kernels, "%s: %zu of %zu kernels cached", what, st.hits, st.kernels);
  CHECK(st.compiled == 0 && st.timed == 0 && st.stored == 0, "%s: compiled %zu, timed %zu, stored %zu: want none", what,
        st.compiled, st.timed, st.stored);
  return st.kernels >= 2 && st.hits == st.kernels && st.compiled == 0 && st.timed == 0;
}

static void test_second_session(void) {
  uj_session *s = session("second session");
  if (!s) return;
  realize_graphs(s, true, "second session");
  all_cached(s, "second session");
  uj_session_free(s);
}

static int child_main(void) {
  uj_session *s = session("second process");
  if (s) realize_graphs(s, true, "second process"), all_cached(s, "second process"), uj_session_free(s);
  return check_report("test_beam (second process)");
}

static void test_second_process(const char *self) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "child", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the second process failed (status %d)", status);
}

/* ---- the hook: the config of a cache line is the one applied ---- */

static const UOp *raw_matmul(uj_session *s, const UOp ***buffers, size_t *n) {
  Rng r = {7};
  double *va, *vb;
  uj_tensor *a = random_f32(s, &r, SHAPE(16, 24), -1, 1, false, &va), *b = random_f32(s, &r, SHAPE(24, 64), -1, 1, false, &vb);
  free(va), free(vb);
  uj_tensor *c = a && b ? uj_tensor_matmul(a, b) : NULL;
  CHECK(c != NULL, "matmul: %s", uj_session_error(s));
  return c ? rangeify_kernel(s->ctx, uj_tensor_uop(c), 64, buffers, n) : NULL;
}

static void test_cache_lines(const char *file) {
  uj_session *s = session("cache lines");
  if (!s) return;
  const UOp **buffers = NULL;
  size_t nbuffers = 0;
  const UOp *raw = raw_matmul(s, &buffers, &nbuffers);
  free(buffers);
  OptSearch *search = s->target.opt.search;
  OptTarget t = {.desc = s->device->desc, .search = search};
  OptConfig c = {0};
  if (raw && search) search->choose(search, s->ctx, raw, &t, &c);
  CHECK(beam_stats(search).searched == 1 && beam_stats(search).stored == 1, "the 16 x 24 x 64 matmul searched and stored");
  char last[512] = "", machine[17] = "", kernel[17] = "";
  count_lines(file, last, sizeof last);
  CHECK(sscanf(last, BEAM_CACHE_TAG " 4 %16s %16s", machine, kernel) == 2, "the last line: %s", last);
  uj_session_free(s);

  /* All passes off, first; then lines that would override it if read. */
  char text[2048];
  snprintf(text, sizeof text,
           BEAM_CACHE_TAG " 4 %s %s 1 1 1 1 1 1 1 1 1 5 6\n"
           "garbage\n\n"
           BEAM_CACHE_TAG " 3 %s %s 0 8 2 2 2 2 0 0 5 6\n"        /* the version before unroll */
           BEAM_CACHE_TAG " 99 %s %s 0 8 2 2 2 2 0 0 0 5 6\n"     /* another version */
           BEAM_CACHE_TAG " 4 %s %s 7 8 2 2 2 2 0 0 0 5 6\n"      /* lanes out of range */
           BEAM_CACHE_TAG " 4 %s %s 0 8 2 2 2 2 3 0 0 5 6\n"      /* reorder out of range */
           BEAM_CACHE_TAG " 4 %s %s 0 8 2 2 2 2 0 3 0 5 6\n"      /* stream out of range */
           BEAM_CACHE_TAG " 4 %s %s 0 8 2 2 2 2 0 0 2000 5 6\n"   /* unroll out of range */
           BEAM_CACHE_TAG " 4 %s %s 0 8 2 2 2 2 0 0 0 5 6 extra\n" /* a word too many */
           BEAM_CACHE_TAG " 4 %s %s 0 8 -2 2 2 2 0 0 0 5 6\n"     /* negative rows */
           BEAM_CACHE_TAG " 4 %s %s 0 8 2\n"                  /* cut short */
           BEAM_CACHE_TAG " 4 0123456789abcdef %s 0 8 2 2 2 2 0 0 0 5 6\n", /* another machine */
           machine, kernel, machine, kernel, machine, kernel, machine, kernel, machine, kernel, machine, kernel, machine,
           kernel, machine, kernel, machine, kernel, machine, kernel, kernel);
  append(file, text);
  s = session("cache lines, again");
  if (!s) return;
  raw = raw_matmul(s, &buffers, &nbuffers);
  free(buffers);
  search = s->target.opt.search;
  t.search = search;
  c = (OptConfig){0};
  if (raw && search) search->choose(search, s->ctx, raw, &t, &c);
  OptConfig off = {OPT_OFF, 1, 1, 1, OPT_OFF, OPT_OFF, OPT_OFF, OPT_OFF, 1, OPT_AUTO, OPT_AUTO};
  CHECK(!memcmp(&c, &off, sizeof c),
        "the config of the line: lanes %u columns %u rows %u tile %u stage %u parallel %u reorder %u stream %u unroll %u",
        c.lanes, c.columns, c.rows, c.tile, c.stage, c.parallel, c.reorder, c.stream, c.unroll);
  BeamStats st = beam_stats(search);
  CHECK(st.hits == 1 && st.compiled == 0 && st.timed == 0, "found: %zu hits, %zu compiled", st.hits, st.compiled);
  const UOp *shaped = raw ? opt_kernel(s->ctx, raw, &t) : NULL;
  CHECK(shaped && shaped == opt_apply(s->ctx, raw, &t, &off), "opt_kernel applies the search's config");
  CHECK(shaped && shaped != opt_apply(s->ctx, raw, &t, &(OptConfig){0}), "... which is not the heuristics' here");
  uj_session_free(s);
}

/* ---- caches that cannot be used ---- */

static void test_unusable(const char *dir) {
  char blocker[4096], path[4096];
  snprintf(blocker, sizeof blocker, "%s/blocker", dir);
  append(blocker, "a file, not a folder\n");
  snprintf(path, sizeof path, "%s/blocker/sub", dir); /* not a folder, even for root */
  setenv("UJ_CACHE_DIR", path, 1);
  uj_session *s = session("unwritable cache");
  if (s) {
    realize_graphs(s, false, "unwritable cache");
    BeamStats st = session_stats(s);
    CHECK(st.searched == 1 && st.stored == 0, "unwritable: searched %zu, stored %zu", st.searched, st.stored);
    uj_session_free(s);
  }
  snprintf(path, sizeof path, "%s/dircache", dir); /* beam.txt a folder: neither read nor written */
  mkdir(path, 0755);
  setenv("UJ_CACHE_DIR", path, 1);
  snprintf(path, sizeof path, "%s/dircache/beam.txt", dir);
  mkdir(path, 0755);
  s = session("unreadable cache");
  if (s) {
    realize_graphs(s, false, "unreadable cache");
    BeamStats st = session_stats(s);
    CHECK(st.searched == 1 && st.hits == 0 && st.stored == 0, "unreadable: searched %zu, stored %zu", st.searched, st.stored);
    uj_session_free(s);
  }
}

static void test_off(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/off", dir);
  mkdir(path, 0755);
  setenv("UJ_CACHE_DIR", path, 1);
  static const char *const values[] = {"0", "", "abc", "-1", "2x"};
  for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
    setenv("UJ_BEAM", values[i], 1);
    uj_session *s = session("UJ_BEAM off");
    if (!s) continue;
    CHECK(s->target.opt.search == NULL, "UJ_BEAM='%s': no search", values[i]);
    realize_graphs(s, false, "UJ_BEAM off");
    uj_session_free(s);
  }
  unsetenv("UJ_BEAM");
  uj_session *s = session("UJ_BEAM unset");
  if (s) {
    CHECK(s->target.opt.search == NULL, "UJ_BEAM unset: no search");
    uj_session_free(s);
  }
  CHECK(dir_entries(path) == 0, "without UJ_BEAM no cache file is made");
}

/* ---- beam_params: scratch buffers of the buffers' sizes ---- */

static void check_params(uj_session *s, uj_tensor *t, bool exact, const char *what) {
  const UOp **buffers = NULL;
  size_t n = 0;
  const UOp *raw = t ? rangeify_kernel(s->ctx, uj_tensor_uop(t), 64, &buffers, &n) : NULL;
  BeamParams p;
  bool ok = raw && beam_params(s->ctx, raw, &p);
  CHECK(ok && p.n == n + 1, "%s: %zu slots, want %zu (%s)", what, ok ? p.n : 0, n + 1, uj_session_error(s));
  size_t out = (size_t)uj_tensor_numel(t) * elem_bytes(dt_scalar(uj_tensor_dtype(t)));
  CHECK(ok && p.bytes[0] == out, "%s: output %zu bytes, want %zu", what, ok ? p.bytes[0] : 0, out);
  for (size_t k = 0; ok && k < n && k + 1 < p.n; k++) {
    size_t want = (size_t)buffers[k]->ints[1] * elem_bytes(dt_base(buffers[k]->dtype)), got = p.bytes[k + 1];
    CHECK(exact ? got == want : got > 0 && got <= want, "%s: input %zu: %zu bytes, want %s%zu", what, k, got,
          exact ? "" : "at most ", want);
  }
  free(buffers);
}

static void test_params(void) {
  uj_session *s = session("params");
  if (!s) return;
  uj_tensor *a = uj_tensor_ones(s, UJ_FLOAT32, SHAPE(8, 12)), *b = uj_tensor_ones(s, UJ_FLOAT32, SHAPE(12, 5));
  uj_tensor *i = uj_tensor_ones(s, UJ_INT32, SHAPE(12, 8));
  check_params(s, uj_tensor_matmul(a, b), true, "matmul");
  check_params(s, uj_tensor_transpose(i, 0, 1), true, "transpose");
  check_params(s, uj_tensor_reduce(UJ_RED_MAX, a, (const int[]){0}, 1, false), true, "max");
  check_params(s, uj_tensor_shrink(a, (const int64_t[]){2, 5, 1, 4}, 2), false, "shrink");
  check_params(s, uj_tensor_binary(UJ_BIN_ADD, a, uj_tensor_cast(uj_tensor_transpose(i, 0, 1), UJ_FLOAT32)), true, "mixed");
  uj_session_free(s);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child_main();
  char dir[] = "/tmp/uj_beam_XXXXXX", file[4096];
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  snprintf(file, sizeof file, "%s/beam.txt", dir);
  unsetenv("UJ_OPT_RANDOM");
  setenv("UJ_CACHE_DIR", dir, 1);
  setenv("UJ_BEAM", "2", 1);
  test_first_session(file);
  test_second_session();
  test_second_process(argv[0]);
  test_cache_lines(file);
  test_unusable(dir);
  test_off(dir);
  test_params();
  CHECK(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0, "removing %s", dir);
  return check_report("test_beam");
}
