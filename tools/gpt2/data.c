/* data.c — token files, the fortunes made into them, and batches (data.h). */
#define _POSIX_C_SOURCE 200809L

#include "data.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpe.h"
#include "util.h"

static const char MAGIC[8] = {'U', 'J', 'G', 'P', 'T', '2', 'T', '1'};

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

bool tokens_write(const char *path, const uint16_t *ids, size_t n, char *err, size_t errlen) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return snprintf(err, errlen, "%s: %s", tmp, strerror(errno)), false;
  unsigned char head[16], le[2];
  memcpy(head, MAGIC, 8), put_u64(head + 8, n);
  bool ok = fwrite(head, 1, sizeof head, f) == sizeof head;
  for (size_t i = 0; ok && i < n; i++) le[0] = (unsigned char)ids[i], le[1] = (unsigned char)(ids[i] >> 8), ok = fwrite(le, 1, 2, f) == 2;
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) != 0) ok = false;
  if (!ok) snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno)), remove(tmp);
  return ok;
}

void tokens_free(gpt2_tokens *t) {
  free(t->ids);
  *t = (gpt2_tokens){0};
}

bool tokens_read(const char *path, gpt2_tokens *t, char *err, size_t errlen) {
  *t = (gpt2_tokens){0};
  FILE *f = fopen(path, "rb");
  if (!f) return snprintf(err, errlen, "%s: %s (scripts/gpt2-data.sh makes the token files)", path, strerror(errno)), false;
  unsigned char head[16];
  bool ok = fread(head, 1, sizeof head, f) == sizeof head && !memcmp(head, MAGIC, 8);
  uint64_t n = ok ? get_u64(head + 8) : 0;
  if (!ok) snprintf(err, errlen, "%s: not a token file (no UJGPT2T1 header)", path);
  else if (fseek(f, 0, SEEK_END) != 0 || ftell(f) != (long)(16 + 2 * n))
    ok = false, snprintf(err, errlen, "%s: the header says %llu tokens, the file holds %ld bytes of them", path, (unsigned long long)n, ftell(f) - 16);
  unsigned char *raw = ok ? malloc(2 * n + 1) : NULL;
  t->ids = ok ? malloc((n ? n : 1) * sizeof *t->ids) : NULL;
  if (ok && (!raw || !t->ids)) ok = false, snprintf(err, errlen, "%s: out of memory", path);
  if (ok && (fseek(f, 16, SEEK_SET) != 0 || fread(raw, 1, 2 * n, f) != 2 * n)) ok = false, snprintf(err, errlen, "%s: read error", path);
  for (size_t i = 0; ok && i < n; i++) t->ids[i] = (uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8);
  t->n = ok ? n : 0;
  free(raw), fclose(f);
  if (!ok) tokens_free(t);
  return ok;
}

/* ---- the fortunes ---- */

typedef struct Ids {
  uint16_t *v;
  size_t n, cap;
} Ids;

static bool ids_push(Ids *a, const int32_t *ids, size_t n) {
  if (a->n + n > a->cap) {
    size_t cap = a->cap ? a->cap : 1 << 16;
    while (cap < a->n + n) cap *= 2;
    uint16_t *grown = realloc(a->v, cap * sizeof *grown);
    if (!grown) return false;
    a->v = grown, a->cap = cap;
  }
  for (size_t i = 0; i < n; i++) a->v[a->n++] = (uint16_t)ids[i];
  return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names of the fortune files in dir, sorted; NULL on error. */
static char **fortune_files(const char *dir, size_t *count, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) return snprintf(err, errlen, "%s: %s (the Debian package fortunes puts its files there)", dir, strerror(errno)), NULL;
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (strchr(e->d_name, '.') || lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    char **grown = realloc(names, (n + 1) * sizeof *names);
    if (!grown || !(grown[n] = strdup(e->d_name))) {
      names = grown ? grown : names;
      break;
    }
    names = grown, n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_str);
  *count = n;
  if (!n) snprintf(err, errlen, "%s: no fortune files", dir);
  return names;
}

/* Encodes each entry of text[0..len) (entries end at a line "%") into
 * train or val, every tenth (counting across files by *entry) to val. */
static bool encode_entries(bpe *tok, const char *text, size_t len, size_t *entry, Ids *train, Ids *val, char *err, size_t errlen) {
  int32_t eot = bpe_eot(tok);
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    bool end = i == len || ((i == 0 || text[i - 1] == '\n') && text[i] == '%' && (i + 1 == len || text[i + 1] == '\n'));
    if (!end) continue;
    if (i > start) {
      int32_t *ids = NULL;
      size_t n = 0;
      if (bpe_encode(tok, text + start, i - start, &ids, &n, err, errlen) != 0) return false;
      Ids *to = (*entry)++ % 10 == 9 ? val : train;
      bool ok = ids_push(to, ids, n) && ids_push(to, &eot, 1);
      free(ids);
      if (!ok) return snprintf(err, errlen, "out of memory"), false;
    }
    start = i + 2 < len ? i + 2 : len; /* past "%\n" */
    if (i == len) break;
  }
  return true;
}

bool gpt2_prepare(const char *text_dir, const char *tok_dir, const char *out_dir, char *err, size_t errlen) {
  char enc[4096], vocab[4096], path[4096];
  snprintf(enc, sizeof enc, "%s/encoder.json", tok_dir), snprintf(vocab, sizeof vocab, "%s/vocab.bpe", tok_dir);
  bpe *tok = bpe_load(enc, vocab, err, errlen);
  if (!tok) return false;
  size_t nfiles = 0, entry = 0, bytes = 0;
  char **files = fortune_files(text_dir, &nfiles, err, errlen);
  Ids train = {0}, val = {0};
  bool ok = files && nfiles;
  for (size_t i = 0; ok && i < nfiles; i++) {
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", text_dir, files[i]);
    char *text = gpt2_read_file(path, &len, err, errlen);
    if (!text) ok = false;
    else ok = encode_entries(tok, text, len, &entry, &train, &val, err, errlen), bytes += len;
    free(text);
  }
  char tpath[4096], vpath[4096];
  snprintf(tpath, sizeof tpath, "%s/train.bin", out_dir), snprintf(vpath, sizeof vpath, "%s/val.bin", out_dir);
  ok = ok && tokens_write(tpath, train.v, train.n, err, errlen) && tokens_write(vpath, val.v, val.n, err, errlen);
  if (ok)
    printf("gpt2 prepare: %zu files, %zu entries, %zu bytes of text: %zu training tokens (%s), %zu validation tokens (%s)\n", nfiles, entry,
           bytes, train.n, tpath, val.n, vpath);
  for (size_t i = 0; files && i < nfiles; i++) free(files[i]);
  free(files), free(train.v), free(val.v);
  bpe_free(tok);
  return ok;
}

/* ---- batches ---- */

uint64_t batch_offset(uint64_t seed, int64_t step, int micro, int row, size_t n, int T) {
  uint64_t h = gpt2_splitmix64(gpt2_splitmix64(gpt2_splitmix64(seed) ^ (uint64_t)step) ^ (uint64_t)micro << 32 ^ (uint64_t)row);
  return h % (uint64_t)(n - (size_t)T);
}

static void window(const gpt2_tokens *t, uint64_t at, int T, int32_t *in, int32_t *out) {
  for (int i = 0; i < T; i++) in[i] = t->ids[at + (uint64_t)i], out[i] = t->ids[at + (uint64_t)i + 1];
}

bool batch_train(const gpt2_tokens *t, uint64_t seed, int64_t step, int micro, int B, int T, int32_t *in, int32_t *out) {
  if (t->n < (size_t)T + 1) return false;
  for (int b = 0; b < B; b++) window(t, batch_offset(seed, step, micro, b, t->n, T), T, in + (size_t)b * T, out + (size_t)b * T);
  return true;
}

bool batch_val(const gpt2_tokens *t, int index, int count, int B, int T, int32_t *in, int32_t *out) {
  if (t->n < (size_t)T + 1) return false;
  uint64_t span = t->n - (size_t)T - 1, windows = (uint64_t)count * (uint64_t)B;
  for (int b = 0; b < B; b++) {
    uint64_t w = (uint64_t)index * (uint64_t)B + (uint64_t)b;
    window(t, windows > 1 ? span * w / (windows - 1) : 0, T, in + (size_t)b * T, out + (size_t)b * T);
  }
  return true;
}
