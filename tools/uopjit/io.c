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

/* All of f, at most IO_MAX_INPUT bytes, NUL-terminated and malloc'd;
 * NULL on a read error (errno set), or with errno EFBIG when f holds more. */
static char *read_stream(FILE *f, size_t *len_out) {
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  while (buf) {
    size_t want = cap - len - 1; /* no more than one byte past the limit */
    len += fread(buf + len, 1, want < IO_MAX_INPUT + 1 - len ? want : IO_MAX_INPUT + 1 - len, f);
    if (ferror(f)) break;
    if (feof(f)) {
      buf[len] = '\0';
      if (len_out) *len_out = len;
      return buf;
    }
    if (len > IO_MAX_INPUT) { /* an endless stream (/dev/zero) stops here */
      errno = EFBIG;
      break;
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

const char *io_read_error(char *buf, size_t size) {
  if (errno != EFBIG) return strerror(errno);
  snprintf(buf, size, "longer than %zu MiB, the most it may be", IO_MAX_INPUT >> 20);
  return buf;
}

bool io_check_text(const char *text, size_t len, const char *where) {
  const char *nul = memchr(text, '\0', len);
  if (!nul) return true;
  int line = 1;
  const char *start = text;
  for (const char *p = text; p < nul; p++)
    if (*p == '\n') line++, start = p + 1;
  report("%s:%d:%d: unexpected byte 0x00 (a NUL: a program is text)", where, line, (int)(nul - start) + 1);
  return false;
}

char *io_read_input(const Options *o, const char **where) {
  char why[80];
  size_t len = 0;
  bool from_stdin = !o->text && (!o->file || !strcmp(o->file, "-"));
  *where = o->text ? "<command line>" : from_stdin ? "<stdin>" : o->file;
  const char *kept = o->text ? o->text : from_stdin ? o->stdin_text : NULL;
  char *text = kept ? strdup(kept) : io_read_file(from_stdin ? "-" : o->file, &len);
  if (!text) report("cannot read '%s': %s", *where, io_read_error(why, sizeof why));
  if (text && !kept && !io_check_text(text, len, *where)) {
    free(text);
    return NULL;
  }
  return text;
}

/* The next line of stdin, its '\n' kept, into p->line: 0; -1 at the end
 * of input; -2 when the line passes IO_MAX_INPUT or memory runs out. */
static int prompt_line(PromptInput *p, size_t *len) {
  *len = 0;
  for (int c; (c = getchar()) != EOF;) {
    if (*len + 2 > p->line_cap) {
      size_t cap = p->line_cap ? 2 * p->line_cap : 256;
      if (*len > IO_MAX_INPUT) return report("<stdin>: a line longer than %zu MiB, the most it may be", IO_MAX_INPUT >> 20), -2;
      char *grown = realloc(p->line, cap);
      if (!grown) return report("<stdin>: out of memory"), -2;
      p->line = grown, p->line_cap = cap;
    }
    p->line[(*len)++] = (char)c;
    if (c == '\n') break;
  }
  if (*len == 0) return -1;
  p->line[*len] = '\0';
  return 0;
}

/* The next line at a terminal, edited (lineedit.c), as prompt_line gives
 * it ('\n' kept); 2: Ctrl-C. */
static int prompt_edited(PromptInput *p, const char *prompt, size_t *len) {
  char *got = NULL;
  int r = lineedit_read(prompt, &got);
  if (r != 1) return r == 2 ? 2 : -1;
  size_t n = strlen(got);
  if (n > IO_MAX_INPUT) return free(got), report("<stdin>: a line longer than %zu MiB, the most it may be", IO_MAX_INPUT >> 20), -2;
  if (n + 2 > p->line_cap) {
    char *grown = realloc(p->line, n + 2);
    if (!grown) return free(got), report("<stdin>: out of memory"), -2;
    p->line = grown, p->line_cap = n + 2;
  }
  memcpy(p->line, got, n), p->line[n] = '\n', p->line[n + 1] = '\0';
  free(got);
  *len = n + 1;
  return 0;
}

int prompt_read(PromptInput *p, bool (*whole)(const char *entry)) {
  size_t n;
  bool edited = lineedit_start(p->history ? p->history : "history", p->complete, p->user);
  for (p->len = 0;;) {
    const char *prompt = p->len ? "... " : "uj> ";
    int got;
    if (edited) {
      got = prompt_edited(p, prompt, &n);
      if (got == 2) { /* Ctrl-C: the entry so far is dropped */
        p->len = 0;
        continue;
      }
    } else {
      fputs(prompt, stdout);
      fflush(stdout);
      got = prompt_line(p, &n);
    }
    if (got < 0) return got == -1 ? 0 : -1;
    if (p->len + n > IO_MAX_INPUT) return report("<stdin>: an entry longer than %zu MiB, the most it may be", IO_MAX_INPUT >> 20), -1;
    char *grown = realloc(p->entry, p->len + n + 1);
    if (!grown) return report("<stdin>: out of memory"), -1;
    memcpy(grown + p->len, p->line, n + 1);
    p->entry = grown, p->len += n;
    if (!io_check_text(p->entry, p->len, "<stdin>")) p->len = 0; /* dropped; the next entry */
    else if (whole(p->entry)) return uj_interrupt(false), 1;
  }
}

void prompt_free(PromptInput *p) {
  lineedit_stop();
  free(p->line);
  free(p->entry);
  *p = (PromptInput){0};
}

bool io_flush(FILE *f, const char *name) {
  errno = 0;
  if (fflush(f) == 0 && !ferror(f)) return true;
  report("cannot write '%s': %s", name, errno ? strerror(errno) : "write error");
  return false;
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
