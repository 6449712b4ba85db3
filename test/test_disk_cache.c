/* test_disk_cache.c — compiled kernels kept on disk (runtime/disk_cache.h):
 * a second JIT (a context is a JIT, as a process is) loads what the first
 * compiled and computes the same bits; corrupt, truncated and foreign
 * entries are misses that are replaced; UJ_CACHE=0 writes nothing; an
 * unusable folder only misses; the folder is trimmed to its bound, oldest
 * first. Every case runs in a folder of its own under a temporary one. */
#define _DEFAULT_SOURCE /* mkdtemp, setenv, utimensat */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cpu/jit.h"
#include "runtime/disk_cache.h"

static char root[256];

/* y[i] = a * x[i] + y[i]: the kernel every case compiles. */
static const char *saxpy =
    "%i = (RANGE loop 0 (DEFINE_VAR:int32 n 0 1000000))\n"
    "%y = (INDEX (PARAM:float32* 1) %i)\n"
    "(SINK (END %i (STORE %y (MULACC (PARAM:float32 2) (LOAD (INDEX (PARAM:float32* 0) %i)) (LOAD %y)))))\n";

/* A fresh cache folder root/name as UJ_CACHE_DIR. */
static void use_folder(const char *name, char *kernels, size_t size) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/%s", root, name);
  mkdir(dir, 0755);
  setenv("UJ_CACHE_DIR", dir, 1);
  snprintf(kernels, size, "%s/kernels", dir);
}

/* The entries (*.ujk) in kernels; the last one's path in path. */
static int entries(const char *kernels, char *path, size_t size) {
  DIR *d = opendir(kernels);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 4, ".ujk")) continue;
    n++;
    if (path) snprintf(path, size, "%s/%s", kernels, e->d_name);
  }
  if (d) closedir(d);
  return n;
}

/* Compiles saxpy in a new context, runs it on 1000 elements; the result's
 * bits in y, whether it came from the disk in *loaded. */
static bool compile_run(float *y, bool *loaded) {
  uj_ctx *ctx = uj_ctx_new();
  const uj_uop *k = uj_parse(ctx, saxpy, "saxpy");
  uj_program *p = k ? uj_compile(ctx, k, "saxpy") : NULL;
  bool ok = p != NULL;
  CHECK(ok, "compile: %s", uj_error(ctx));
  if (ok) {
    static float x[1000];
    for (int i = 0; i < 1000; i++) x[i] = (float)i * 0.37f - 11.0f, y[i] = 1.0f / (float)(i + 1);
    float a = 1.7f;
    void *args[3] = {x, y, &a};
    int64_t n = 1000;
    ok = uj_run(p, args, 3, &n, 1) == UJ_OK;
    *loaded = cpu_program_loaded(p);
  }
  uj_program_free(p);
  uj_ctx_free(ctx);
  return ok;
}

static void test_reuse(void) {
  char kernels[512], path[768];
  use_folder("reuse", kernels, sizeof kernels);
  float first[1000], second[1000];
  bool loaded = true;
  CHECK(compile_run(first, &loaded) && !loaded, "the first compile is LLVM's");
  CHECK(entries(kernels, path, sizeof path) == 1, "one entry written");
  CHECK(compile_run(second, &loaded) && loaded, "the second JIT loads it");
  CHECK(!memcmp(first, second, sizeof first), "the loaded code computes the same bits");
  CHECK(entries(kernels, NULL, 0) == 1, "still one entry");
}

/* Damage the entry, then: a miss, compiled, the entry replaced by a good
 * one (the next JIT loads it). */
static void damaged(const char *name, void (*damage)(const char *path)) {
  char kernels[512], path[768];
  use_folder(name, kernels, sizeof kernels);
  float want[1000], got[1000];
  bool loaded;
  compile_run(want, &loaded);
  CHECK(entries(kernels, path, sizeof path) == 1, "%s: an entry", name);
  damage(path);
  CHECK(compile_run(got, &loaded) && !loaded, "%s: the damaged entry is a miss", name);
  CHECK(!memcmp(want, got, sizeof want), "%s: the same bits", name);
  CHECK(compile_run(got, &loaded) && loaded, "%s: the entry was replaced by a good one", name);
  CHECK(!memcmp(want, got, sizeof want), "%s: the same bits from the new entry", name);
}

static void flip_byte(const char *path) {
  int fd = open(path, O_RDWR);
  unsigned char b = 0;
  off_t at = lseek(fd, 0, SEEK_END) / 2;
  CHECK(fd >= 0 && pread(fd, &b, 1, at) == 1, "read %s", path);
  b ^= 0x40;
  CHECK(pwrite(fd, &b, 1, at) == 1, "write %s", path);
  close(fd);
}

static void truncate_half(const char *path) {
  struct stat st;
  CHECK(stat(path, &st) == 0 && truncate(path, st.st_size / 2) == 0, "truncate %s", path);
}

static void empty_file(const char *path) { CHECK(truncate(path, 0) == 0, "truncate %s", path); }

/* A well-formed entry of another key under this key's file name. */
static void foreign(const char *path) {
  char other[768];
  snprintf(other, sizeof other, "%s.other", path);
  const char *dir = getenv("UJ_CACHE_DIR");
  char elsewhere[600];
  snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", dir);
  setenv("UJ_CACHE_DIR", elsewhere, 1);
  disk_cache_put("another key", 11, "junk", 4);
  char made[800];
  snprintf(made, sizeof made, "%s/kernels", elsewhere);
  char entry[900];
  CHECK(entries(made, entry, sizeof entry) == 1, "the foreign entry was made");
  CHECK(rename(entry, path) == 0, "moved over %s", path);
  setenv("UJ_CACHE_DIR", dir, 1);
}

static void test_off(void) {
  char kernels[512];
  use_folder("off", kernels, sizeof kernels);
  float y[1000];
  bool loaded = true;
  const char *offs[] = {"0", "off", "no", "false"};
  for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
    setenv("UJ_CACHE", offs[i], 1);
    CHECK(!disk_cache_on(), "UJ_CACHE=%s is off", offs[i]);
    CHECK(compile_run(y, &loaded) && !loaded, "UJ_CACHE=%s: compiled", offs[i]);
    CHECK(entries(kernels, NULL, 0) == 0, "UJ_CACHE=%s: nothing written", offs[i]);
  }
  setenv("UJ_CACHE", "1", 1);
  CHECK(disk_cache_on(), "UJ_CACHE=1 is on");
  unsetenv("UJ_CACHE");
  CHECK(disk_cache_on(), "on by default");
}

/* A folder that cannot be made (under a regular file): misses, no error. */
static void test_unusable(void) {
  char file[512];
  snprintf(file, sizeof file, "%s/a-file", root);
  FILE *f = fopen(file, "w");
  CHECK(f != NULL, "make %s", file);
  if (f) fclose(f);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/below", file);
  setenv("UJ_CACHE_DIR", dir, 1);
  float y[1000];
  bool loaded = true;
  CHECK(compile_run(y, &loaded) && !loaded, "compiled beside a cache that cannot be written");
  CHECK(compile_run(y, &loaded) && !loaded, "and again");
}

/* The folder over UJ_CACHE_MAX_MB: the oldest entries go first. */
static void test_trim(void) {
  char kernels[512];
  use_folder("trim", kernels, sizeof kernels);
  mkdir(kernels, 0755);
  static char blob[300 * 1024];
  char path[768];
  for (int i = 0; i < 6; i++) { /* 6 x 300 KiB, entry i aged 6 - i hours */
    snprintf(path, sizeof path, "%s/%032x.ujk", kernels, i);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(blob, 1, sizeof blob, f) == sizeof blob, "write %s", path);
    if (f) fclose(f);
    struct timespec t[2] = {{time(NULL) - (6 - i) * 3600, 0}, {time(NULL) - (6 - i) * 3600, 0}};
    utimensat(AT_FDCWD, path, t, 0);
  }
  snprintf(path, sizeof path, "%s/%032x.ujk.tmp.1.1", kernels, 99); /* left by a process that died */
  FILE *f = fopen(path, "wb");
  if (f) fclose(f);
  struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
  utimensat(AT_FDCWD, path, old, 0);
  setenv("UJ_CACHE_MAX_MB", "1", 1); /* 1 MiB: 1.8 MiB must come down to 0.75 */
  disk_cache_trim();
  unsetenv("UJ_CACHE_MAX_MB");
  CHECK(entries(kernels, NULL, 0) == 2, "two entries left, not %d", entries(kernels, NULL, 0));
  for (int i = 0; i < 6; i++) {
    snprintf(path, sizeof path, "%s/%032x.ujk", kernels, i);
    CHECK((access(path, F_OK) == 0) == (i >= 4), "entry %d %s", i, i >= 4 ? "kept (newest)" : "removed (oldest)");
  }
  snprintf(path, sizeof path, "%s/%032x.ujk.tmp.1.1", kernels, 99);
  CHECK(access(path, F_OK) != 0, "the stale temporary file removed");
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  char path[1024];
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(path);
    else unlink(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/uj_disk_cache_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(root)) return perror("mkdtemp"), 1;
  unsetenv("UJ_CACHE");
  test_trim();
  test_reuse();
  damaged("flipped", flip_byte);
  damaged("truncated", truncate_half);
  damaged("empty", empty_file);
  damaged("foreign", foreign);
  test_off();
  test_unusable();
  remove_tree(root);
  return check_report("test_disk_cache");
}
