/* tmp_dir.h — a temporary folder and whole files, for the tests of file
 * formats (test_npy.c, test_safetensors.c).
 *
 * A TmpDir's dir is filled by mkdtemp; tmp_file names a file in it (in
 * path, valid until the next call), tmp_count counts its entries
 * (temporary files left behind show), tmp_remove empties and removes it.
 * file_put writes bytes, file_get reads a whole file (malloc'd), and
 * file_exists says whether a path names anything. */
#ifndef UJ_TEST_TMP_DIR_H
#define UJ_TEST_TMP_DIR_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct TmpDir {
  char dir[64];
  char path[384]; /* the last file named by tmp_file */
} TmpDir;

static inline const char *tmp_file(TmpDir *t, const char *name) {
  snprintf(t->path, sizeof t->path, "%s/%s", t->dir, name);
  return t->path;
}

static inline int tmp_count(TmpDir *t) {
  DIR *d = opendir(t->dir);
  struct dirent *ent;
  int n = 0;
  while (d && (ent = readdir(d)) != NULL) n += strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0;
  if (d) closedir(d);
  return n;
}

/* true when nothing was in the way. */
static inline bool tmp_remove(TmpDir *t) {
  DIR *d = opendir(t->dir);
  struct dirent *ent;
  bool ok = d != NULL;
  char path[384];
  while (d && (ent = readdir(d)) != NULL) {
    if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", t->dir, ent->d_name);
    ok = remove(path) == 0 && ok;
  }
  if (d) closedir(d);
  return rmdir(t->dir) == 0 && ok;
}

static inline bool file_put(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  bool ok = f && (n == 0 || fwrite(bytes, 1, n, f) == n);
  return f && fclose(f) == 0 && ok;
}

/* NULL when unreadable; *n its bytes. */
static inline unsigned char *file_get(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;
  unsigned char *b = fstat(fileno(f), &st) == 0 ? malloc((size_t)st.st_size + 1) : NULL;
  *n = b ? fread(b, 1, (size_t)st.st_size + 1, f) : 0;
  fclose(f);
  return b;
}

static inline bool file_exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

#endif
