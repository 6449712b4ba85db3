/* disk_cache.c — the disk cache of compiled kernels (disk_cache.h).
 *
 * An entry file: "UJKC", a format number, the key's and the payload's
 * lengths (8 bytes each, in this machine's byte order: the key names the
 * target, so no other machine reads it), the key, the payload, and an
 * FNV-1a checksum of all before it. The file's name hashes the key
 * twice (two FNV-1a streams, 128 bits); the key inside decides a hit. */
#define _DEFAULT_SOURCE /* dirent d_type, utimensat */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "llvm/pipeline.h"
#include "runtime/disk_cache.h"
#include "uop/file.h"
#include "uop/hash.h"
#include "uop/text.h"

enum {
  ENTRY_FORMAT = 1,
  HEADER_BYTES = 4 + 4 + 8 + 8,
  PATH_MAX_LEN = 4096,
  SCAN_EVERY = 32,      /* puts between two looks at the folder's size */
  STALE_TMP_S = 600,    /* a temporary file this old was left by a process that died */
};
#define ENTRY_MAGIC "UJKC"
#define ENTRY_MAX_BYTES ((size_t)1 << 30)

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  if (pipeline_debug_level() < 1) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "UJ_DEBUG: disk cache: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void disk_cache_path(char *out, size_t size, const char *name) {
  const char *dir = getenv("UJ_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n = dir && *dir     ? snprintf(out, size, "%s/%s", dir, name)
          : xdg && *xdg   ? snprintf(out, size, "%s/uopjit/%s", xdg, name)
          : home && *home ? snprintf(out, size, "%s/.cache/uopjit/%s", home, name)
                          : -1;
  if (n < 0 || (size_t)n >= size) out[0] = '\0';
}

void disk_cache_make_parents(const char *path) {
  char dir[PATH_MAX_LEN];
  if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return;
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(dir, 0755);
    *p = '/';
  }
}

static _Thread_local bool skipping;

void disk_cache_skip(bool on) { skipping = on; }

bool disk_cache_on(void) {
  if (skipping) return false;
  const char *v = getenv("UJ_CACHE");
  if (v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "false"))) return false;
  char path[PATH_MAX_LEN];
  disk_cache_path(path, sizeof path, "kernels");
  return path[0] != '\0';
}

/* <folder>/kernels/<32 hex>.ujk; false when it does not fit. */
static bool entry_path(const char *key, size_t keylen, char *out, size_t size) {
  char dir[PATH_MAX_LEN];
  disk_cache_path(dir, sizeof dir, "kernels");
  uint64_t a = fnv1a(FNV_OFFSET, key, keylen), b = fnv1a(0x84222325cbf29ce4ull, key, keylen);
  int n = dir[0] ? snprintf(out, size, "%s/%016llx%016llx.ujk", dir, (unsigned long long)a, (unsigned long long)b) : -1;
  return n > 0 && (size_t)n < size;
}

static uint64_t load_u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

bool disk_cache_get(const char *key, size_t keylen, void **data, size_t *n) {
  char path[PATH_MAX_LEN];
  if (!disk_cache_on() || !entry_path(key, keylen, path, sizeof path)) return false;
  size_t size = 0;
  unsigned char *buf = (unsigned char *)file_read(path, ENTRY_MAX_BYTES, &size);
  if (!buf) {
    if (errno != ENOENT) note("%s: cannot be read (%s); a miss (the compile that follows replaces it)", path, strerror(errno));
    return false;
  }
  uint32_t format = 0;
  if (size >= HEADER_BYTES) memcpy(&format, buf + 4, sizeof format);
  uint64_t klen = size >= HEADER_BYTES ? load_u64(buf + 8) : 0, plen = size >= HEADER_BYTES ? load_u64(buf + 16) : 0;
  const char *why = size < HEADER_BYTES || memcmp(buf, ENTRY_MAGIC, 4) ? "not an entry"
                    : format != ENTRY_FORMAT                          ? "another format"
                    : klen > size || plen > size || HEADER_BYTES + klen + plen + 8 != size ? "its lengths disagree with its size"
                    : load_u64(buf + size - 8) != fnv1a(FNV_OFFSET, buf, size - 8) ? "its checksum is wrong"
                                                                                     : NULL;
  if (why) { /* not unlinked: another process may have renamed a good entry there since */
    note("%s: %s; a miss (the compile that follows replaces it)", path, why);
    free(buf);
    return false;
  }
  if (klen != keylen || memcmp(buf + HEADER_BYTES, key, keylen)) { /* another key of the same name */
    note("%s: holds another kernel; a miss", path);
    free(buf);
    return false;
  }
  *n = plen;
  memmove(buf, buf + HEADER_BYTES + klen, plen);
  *data = buf;
  utimensat(AT_FDCWD, path, NULL, 0); /* used now: the last to go when the folder is full */
  return true;
}

/* ---- the folder's size ---- */

typedef struct Entry {
  time_t mtime;
  off_t bytes;
  char name[48];
} Entry;

static int by_age(const void *a, const void *b) {
  const Entry *x = a, *y = b;
  return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

static size_t max_bytes(void) {
  const char *v = getenv("UJ_CACHE_MAX_MB");
  char *end = NULL;
  unsigned long long mb = v && *v ? strtoull(v, &end, 10) : 0;
  if (!end || *end || mb == 0 || mb > (1ull << 30)) mb = 1024;
  return (size_t)mb << 20;
}

/* Entries removed, oldest first, until the folder holds 3/4 of the most
 * it may; temporary files of processes that died go too. */
static void shrink(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  Entry *es = NULL;
  size_t n = 0, cap = 0, total = 0;
  time_t now = time(NULL);
  char path[PATH_MAX_LEN];
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    bool entry = len == 36 && !strcmp(e->d_name + 32, ".ujk"), tmp = strstr(e->d_name, ".ujk.tmp.") != NULL;
    struct stat st;
    if ((!entry && !tmp) || snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path ||
        stat(path, &st) != 0)
      continue;
    if (tmp) {
      if (now - st.st_mtime > STALE_TMP_S) unlink(path);
      continue;
    }
    if (n == cap) {
      Entry *more = realloc(es, (cap = cap ? 2 * cap : 256) * sizeof *es);
      if (!more) break;
      es = more;
    }
    es[n] = (Entry){st.st_mtime, st.st_size, ""};
    memcpy(es[n++].name, e->d_name, len + 1);
    total += (size_t)st.st_size;
  }
  closedir(d);
  size_t most = max_bytes();
  if (total > most) {
    qsort(es, n, sizeof *es, by_age);
    for (size_t i = 0; i < n && total > most / 4 * 3; i++)
      if (snprintf(path, sizeof path, "%s/%s", dir, es[i].name) < (int)sizeof path && unlink(path) == 0)
        total -= (size_t)es[i].bytes;
    note("%s: over UJ_CACHE_MAX_MB, the oldest entries removed", dir);
  }
  free(es);
}

static bool write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w, n -= (size_t)w;
  }
  return true;
}

void disk_cache_put(const char *key, size_t keylen, const void *data, size_t n) {
  static atomic_uint puts, tmp_number;
  char path[PATH_MAX_LEN], tmp[PATH_MAX_LEN + 64];
  if (!disk_cache_on() || !entry_path(key, keylen, path, sizeof path)) return;
  if (HEADER_BYTES + keylen + n + 8 > ENTRY_MAX_BYTES) return;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&tmp_number, 1));
  disk_cache_make_parents(path);
  unsigned char header[HEADER_BYTES];
  uint32_t format = ENTRY_FORMAT;
  uint64_t klen = keylen, plen = n;
  memcpy(header, ENTRY_MAGIC, 4);
  memcpy(header + 4, &format, 4);
  memcpy(header + 8, &klen, 8);
  memcpy(header + 16, &plen, 8);
  uint64_t sum = fnv1a(fnv1a(fnv1a(FNV_OFFSET, header, sizeof header), key, keylen), data, n);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write_all(fd, header, sizeof header) && write_all(fd, key, keylen) && write_all(fd, data, n) &&
            write_all(fd, &sum, sizeof sum);
  int saved = errno;
  if (fd >= 0 && close(fd) != 0 && ok) ok = false, saved = errno;
  if (ok && rename(tmp, path) != 0) ok = false, saved = errno;
  if (!ok) {
    if (fd >= 0) unlink(tmp);
    note("%s: not written (%s)", path, strerror(saved));
    return;
  }
  if (atomic_fetch_add(&puts, 1) % SCAN_EVERY == SCAN_EVERY - 1) disk_cache_trim();
}

char *disk_cache_key(Ctx *ctx, const UOp *kernel, const Target *t, const char *what, size_t *len) {
  char *text = text_print(ctx, kernel);
  if (!text) return NULL;
  const char *head_fmt = "build %s\n%s\n%s %s %s %s %s\n";
  const char *build = disk_cache_build_id(), *version = uj_version();
  int head = snprintf(NULL, 0, head_fmt, build, version, what, target_kind_names[t->kind], t->triple, t->cpu, t->features);
  size_t n = (size_t)head + strlen(text);
  char *key = head > 0 ? malloc(n + 1) : NULL;
  if (key) {
    snprintf(key, n + 1, head_fmt, build, version, what, target_kind_names[t->kind], t->triple, t->cpu, t->features);
    memcpy(key + head, text, n - (size_t)head + 1);
    *len = n;
  } else {
    ctx_set_error(ctx, "compile: out of memory");
  }
  free(text);
  return key;
}

char *disk_cache_code(Device *d, const UOp *kernel, const Target *t, const char *what, bool fresh, KernelSig *sig,
                      CodeMaker make, void *program, size_t *len, bool *loaded) {
  Ctx *ctx = d->ctx;
  size_t keylen = 0;
  bool on = disk_cache_on();
  char *key = on ? disk_cache_key(ctx, kernel, t, what, &keylen) : NULL;
  void *code = NULL;
  *loaded = false;
  if (key && !fresh && disk_cache_get(key, keylen, &code, len)) {
    *loaded = kernel_sig_build(ctx, kernel, sig);
    if (*loaded) return free(key), code;
    free(code), code = NULL;
  }
  if (on && !key) ctx_clear_error(ctx); /* no key (no memory): compiled, not kept */
  code = make(d, kernel, program, len);
  if (code && key) disk_cache_put(key, keylen, code, *len);
  free(key);
  return code;
}

void disk_cache_trim(void) {
  char dir[PATH_MAX_LEN];
  disk_cache_path(dir, sizeof dir, "kernels");
  if (dir[0]) shrink(dir);
}
