/* replay.c — the main of a fuzz target built without libFuzzer (any
 * compiler; every build's CTest test fuzz_<target>_replay).
 *
 * In: files and folders on the command line. Out: LLVMFuzzerTestOneInput
 * run once on each file, and on each regular file of each folder in name
 * order (names starting with '.' skipped: .gitkeep), its bytes in a buffer
 * of exactly their size so that AddressSanitizer sees a read past them;
 * then "replay: N inputs" on stdout and status 0. A broken property
 * aborts inside the target (fuzz_fail), a sanitizer report stops the run,
 * an unreadable file or folder is status 1: any of them fails the test. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* All of path, malloc'd (size bytes; at least 1 allocated), or NULL. */
static uint8_t *replay_read(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  if (!f) return NULL;
  uint8_t *data = NULL;
  if (fstat(fileno(f), &st) == 0 && st.st_size >= 0) {
    *size = (size_t)st.st_size;
    data = malloc(*size ? *size : 1);
    if (data && fread(data, 1, *size, f) != *size) free(data), data = NULL;
  }
  fclose(f);
  return data;
}

static int replay_file(const char *path, long *count) {
  size_t size = 0;
  uint8_t *data = replay_read(path, &size);
  if (!data) return fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno)), 1;
  fprintf(stderr, "replay: %s\n", path);
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  (*count)++;
  return 0;
}

static int skip_hidden(const struct dirent *d) { return d->d_name[0] != '.'; }

static int replay_dir(const char *dir, long *count) {
  struct dirent **names;
  int n = scandir(dir, &names, skip_hidden, alphasort), rc = 0;
  if (n < 0) return fprintf(stderr, "replay: cannot read %s: %s\n", dir, strerror(errno)), 1;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(dir) + strlen(names[i]->d_name) + 2;
    char *path = malloc(len);
    struct stat st;
    if (!path) return fputs("replay: out of memory\n", stderr), 1;
    snprintf(path, len, "%s/%s", dir, names[i]->d_name);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) rc |= replay_file(path, count);
    free(path);
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  long count = 0;
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) rc |= replay_dir(argv[i], &count);
    else rc |= replay_file(argv[i], &count);
  }
  printf("replay: %ld inputs\n", count);
  return rc;
}
