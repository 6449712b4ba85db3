/* io.c — reading the program and data files, writing results.
 *
 * In: paths ("-" is stdin) and the options that name the input. Out:
 * malloc'd, NUL-terminated contents with their length; results written to
 * a file or stdout, text with a final newline, binary byte for byte. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* All of f, NUL-terminated and malloc'd; NULL on a read error (errno set). */
static char *read_stream(FILE *f, size_t *len_out) {
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len - 1, f);
    if (ferror(f)) break;
    if (feof(f)) {
      buf[len] = '\0';
      if (len_out) *len_out = len;
      return buf;
    }
    char *grown = len + 1 == cap ? realloc(buf, cap *= 2) : buf;
    if (!grown) break;
    buf = grown;
  }
  free(buf);
  return NULL;
}

char *io_read_file(const char *path, size_t *len) {
  if (!strcmp(path, "-")) return read_stream(stdin, len);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *data = read_stream(f, len);
  int saved = errno;
  fclose(f);
  errno = saved;
  return data;
}

char *io_read_input(const Options *o, const char **where) {
  bool from_stdin = !o->text && (!o->file || !strcmp(o->file, "-"));
  *where = o->text ? "<command line>" : from_stdin ? "<stdin>" : o->file;
  char *text = o->text ? strdup(o->text) : io_read_file(from_stdin ? "-" : o->file, NULL);
  if (!text) report("cannot read '%s': %s", *where, strerror(errno));
  return text;
}

bool io_write_text(FILE *f, const char *text) {
  size_t n = strlen(text);
  if (fwrite(text, 1, n, f) != n) return false;
  return (n > 0 && text[n - 1] == '\n') || fputc('\n', f) != EOF;
}

bool io_write_output(const char *path, const char *data, size_t len, bool binary) {
  FILE *f = path ? fopen(path, binary ? "wb" : "w") : stdout;
  bool ok = f && (binary ? fwrite(data, 1, len, f) == len : io_write_text(f, data));
  if (f) ok = (path ? fclose(f) : fflush(f)) == 0 && ok;
  if (!ok) report("cannot write '%s': %s", path ? path : "<stdout>", strerror(errno));
  return ok;
}

const char *io_label(const char *option, const char *value, char *buf, size_t size) {
  size_t n = strlen(value);
  snprintf(buf, size, "%s %.*s%s", option, n > 40 ? 37 : (int)n, value, n > 40 ? "..." : "");
  return buf;
}
