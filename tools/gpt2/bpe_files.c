/* bpe_files.c — the tokenizer's two files, read and checked.
 *
 * In: encoder.json, one JSON object {"token": id, ...}, and vocab.bpe, a
 * "#version" line and then one merge a line, "first second", best first.
 * Tokens are written in GPT-2's stand-in characters (bytes_to_unicode):
 * the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for themselves, the
 * other 68 bytes, in order, for U+0100 .. U+0143 (so "Ġ" is a space).
 * Out: a BpeVocab (each token's bytes <-> its id, the ids 0 .. count - 1
 * each once) and the merge ranks, keyed by the bytes first ',' second.
 *
 * Every token and merge is checked: a key that is not a string of stand-
 * ins, a repeated key or id, a merge line that is not two tokens of the
 * vocabulary joined by one space, or one whose join is not a token, is an
 * error naming the file and the byte or line. So every token the merges
 * make is in the vocabulary. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_internal.h"
#include "util.h"

/* ---- bytes and their stand-ins ---- */

#define STANDIN_END 0x144 /* the stand-ins are below U+0144 */

static bool stands_for_itself(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* table[cp]: the byte that stand-in cp stands for, or -1. */
static void standin_table(int16_t table[STANDIN_END]) {
  for (size_t cp = 0; cp < STANDIN_END; cp++) table[cp] = -1;
  unsigned next = 0x100; /* the next stand-in of a byte that is not its own */
  for (unsigned b = 0; b < 256; b++) table[stands_for_itself(b) ? b : next++] = (int16_t)b;
}

/* The byte that code point cp stands for, or -1. */
static int standin_byte(const int16_t table[STANDIN_END], uint32_t cp) {
  return cp < STANDIN_END ? table[cp] : -1;
}

/* ---- a growing byte string ---- */

typedef struct Bytes {
  char *v;
  size_t len, cap;
} Bytes;

static int bytes_push(Bytes *b, char c) {
  if (b->len == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    char *v = realloc(b->v, cap);
    if (!v) return -1;
    b->v = v, b->cap = cap;
  }
  b->v[b->len++] = c;
  return 0;
}

/* ---- encoder.json ---- */

/* One "token": id of the object, in the order of the file. */
typedef struct JsonEntry {
  int32_t id;
  BpeToken token;
} JsonEntry;

typedef struct Json {
  const char *path, *s;
  size_t len, pos;
  char *err;
  size_t errlen;
  int16_t standin[STANDIN_END];
  Bytes bytes;        /* every key's bytes, back to back */
  JsonEntry *entries; /* every key and id */
  size_t count, cap;
} Json;

/* "PATH: byte N: what", N = at + 1 (bytes counted from 1; the end of the
 * file is one past its last byte); returns -1. */
static int json_fail(const Json *j, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int json_fail(const Json *j, size_t at, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return bpe_fail(j->err, j->errlen, "%s: byte %zu: %s", j->path, at + 1, what);
}

/* The byte at j->pos, or '\0' at the end of the file. */
static char json_peek(const Json *j) { return j->pos < j->len ? j->s[j->pos] : '\0'; }

static void json_skip_space(Json *j) {
  for (char c = json_peek(j); c == ' ' || c == '\t' || c == '\n' || c == '\r'; c = json_peek(j))
    j->pos++;
}

/* The byte c after optional white space. */
static int json_expect(Json *j, char c, const char *what) {
  json_skip_space(j);
  if (j->pos == j->len) return json_fail(j, j->pos, "the file ends where %s should be", what);
  if (j->s[j->pos] != c) return json_fail(j, j->pos, "expected %s", what);
  j->pos++;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The 4 hex digits of \uXXXX. A surrogate (half of \uD83D\uDE00) stands
 * for no byte, so it is not paired with the next. */
static int json_hex4(Json *j, uint32_t *u) {
  *u = 0;
  for (int i = 0; i < 4; i++, j->pos++) {
    int d = hex_digit(json_peek(j));
    if (d < 0) return json_fail(j, j->pos, "expected 4 hex digits after \\u");
    *u = *u << 4 | (uint32_t)d;
  }
  return 0;
}

/* The escape at j->pos, just past its backslash, as a code point. */
static int json_escape(Json *j, uint32_t *cp) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  char c = json_peek(j);
  const char *e = c ? strchr(from, c) : NULL;
  j->pos++;
  if (c == 'u') return json_hex4(j, cp);
  if (!e) return json_fail(j, j->pos - 1, "not a JSON escape");
  *cp = (unsigned char)to[e - from];
  return 0;
}

/* One character of a string at j->pos (not its closing quote) as the
 * byte it stands for, appended to j->bytes. */
static int json_string_char(Json *j) {
  size_t at = j->pos;
  unsigned char c = (unsigned char)j->s[at];
  uint32_t cp;
  if (c < 0x20) return json_fail(j, at, "a control character in a string");
  if (c == '\\') {
    j->pos++;
    if (json_escape(j, &cp) < 0) return -1;
  } else {
    j->pos += bpe_utf8_decode(j->s, j->len, at, &cp);
    if (cp == BPE_UTF8_INVALID) return json_fail(j, at, "not UTF-8");
  }
  int byte = standin_byte(j->standin, cp);
  if (byte < 0) return json_fail(j, at, "U+%04X stands for no byte", (unsigned)cp);
  if (bytes_push(&j->bytes, (char)byte) < 0) return json_fail(j, at, "out of memory");
  return 0;
}

/* A key (after optional white space): its bytes appended to j->bytes. */
static int json_key(Json *j) {
  if (json_expect(j, '"', "a key (a string)") < 0) return -1;
  while (j->pos < j->len && j->s[j->pos] != '"') {
    if (json_string_char(j) < 0) return -1;
  }
  if (j->pos == j->len) return json_fail(j, j->pos, "the file ends inside a string");
  j->pos++;
  return 0;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* An id (after optional white space): a whole number from 0 to INT32_MAX,
 * written as JSON writes it. */
static int json_id(Json *j, int32_t *id) {
  json_skip_space(j);
  size_t start = j->pos;
  int64_t v = 0;
  while (is_digit(json_peek(j)) && v <= INT32_MAX) v = v * 10 + (j->s[j->pos++] - '0');
  char next = json_peek(j);
  bool leading_zero = j->pos - start > 1 && j->s[start] == '0';
  if (j->pos == start || is_digit(next) || next == '.' || next == 'e' || next == 'E' ||
      leading_zero || v > INT32_MAX)
    return json_fail(j, start, "expected a token id (a whole number, 0 to %d)", INT32_MAX);
  *id = (int32_t)v;
  return 0;
}

/* The key j->bytes[start..] (read at key_pos) with its id. */
static int json_add(Json *j, size_t start, size_t key_pos, int32_t id, BpeVocab *vocab) {
  const char *key = j->bytes.v + start;
  size_t len = j->bytes.len - start;
  int32_t seen;
  if (len == 0) return json_fail(j, key_pos, "an empty key");
  if (bpe_map_get(&vocab->ids, key, len, &seen)) return json_fail(j, key_pos, "a key seen before");
  if (j->count == j->cap) {
    size_t cap = j->cap ? j->cap * 2 : 1024;
    JsonEntry *entries = realloc(j->entries, cap * sizeof *entries);
    if (!entries) return json_fail(j, key_pos, "out of memory");
    j->entries = entries, j->cap = cap;
  }
  if (bpe_map_put(&vocab->ids, key, len, id) < 0) return json_fail(j, key_pos, "out of memory");
  j->entries[j->count++] = (JsonEntry){id, {start, len}};
  return 0;
}

/* The object's entries into j->entries (and vocab->ids); then only white
 * space. */
static int json_object(Json *j, BpeVocab *vocab) {
  if (json_expect(j, '{', "'{' (encoder.json is one JSON object)") < 0) return -1;
  json_skip_space(j);
  bool more = json_peek(j) != '}';
  while (more) {
    json_skip_space(j);
    size_t key_pos = j->pos, start = j->bytes.len;
    int32_t id = 0;
    if (json_key(j) < 0 || json_expect(j, ':', "':' after the key") < 0 || json_id(j, &id) < 0 ||
        json_add(j, start, key_pos, id, vocab) < 0)
      return -1;
    json_skip_space(j);
    more = json_peek(j) == ',';
    if (more) j->pos++;
  }
  if (json_expect(j, '}', "',' or '}'") < 0) return -1;
  json_skip_space(j);
  if (j->pos != j->len) return json_fail(j, j->pos, "text after the object");
  return 0;
}

/* vocab->tokens by id from the entries: the ids must be 0 .. count - 1. */
static int json_order_by_id(Json *j, BpeVocab *vocab) {
  size_t n = j->count;
  if (n == 0) return bpe_fail(j->err, j->errlen, "%s: no tokens", j->path);
  BpeToken *tokens = malloc(n * sizeof *tokens);
  if (!tokens) return bpe_fail(j->err, j->errlen, "%s: out of memory", j->path);
  for (size_t i = 0; i < n; i++) tokens[i].len = 0; /* no token is empty: 0 is "none yet" */
  for (size_t i = 0; i < n; i++) {
    int32_t id = j->entries[i].id;
    const char *why = NULL;
    if ((size_t)id >= n) why = "is past the last id";
    else if (tokens[id].len) why = "is given twice";
    if (why) {
      free(tokens);
      return bpe_fail(j->err, j->errlen, "%s: id %d %s (%zu tokens: the ids must be 0 to %zu)",
                      j->path, id, why, n, n - 1);
    }
    tokens[id] = j->entries[i].token;
  }
  vocab->tokens = tokens, vocab->count = n;
  return 0;
}

int bpe_read_encoder(const char *path, BpeVocab *vocab, char *err, size_t errlen) {
  *vocab = (BpeVocab){0};
  Json j = {.path = path, .err = err, .errlen = errlen};
  if (!(j.s = gpt2_read_file(path, &j.len, err, errlen))) return -1;
  standin_table(j.standin);
  int rc = json_object(&j, vocab);
  if (rc == 0) rc = json_order_by_id(&j, vocab);
  free((char *)j.s), free(j.entries);
  vocab->bytes = j.bytes.v;
  if (rc < 0) bpe_vocab_free(vocab);
  return rc;
}

void bpe_vocab_free(BpeVocab *vocab) {
  bpe_map_free(&vocab->ids);
  free(vocab->tokens), free(vocab->bytes);
  *vocab = (BpeVocab){0};
}

/* ---- vocab.bpe ---- */

typedef struct Merges {
  const char *path;
  char *err;
  size_t errlen;
  size_t line; /* counted from 1 */
  const BpeVocab *vocab;
  int16_t standin[STANDIN_END];
  Bytes join; /* the merge's first and second token, as bytes */
  Bytes key;  /* first ',' second */
} Merges;

/* "PATH: line N: what"; returns -1. */
static int merges_fail(const Merges *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int merges_fail(const Merges *m, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return bpe_fail(m->err, m->errlen, "%s: line %zu: %s", m->path, m->line, what);
}

/* The token written s[0..len) in stand-ins, appended to m->join as bytes;
 * it must be a token of the vocabulary. */
static int merges_token(Merges *m, const char *s, size_t len) {
  size_t start = m->join.len;
  int32_t id;
  for (size_t pos = 0; pos < len;) {
    uint32_t cp;
    pos += bpe_utf8_decode(s, len, pos, &cp);
    if (cp == BPE_UTF8_INVALID) return merges_fail(m, "not UTF-8");
    int byte = standin_byte(m->standin, cp);
    if (byte < 0) return merges_fail(m, "U+%04X stands for no byte", (unsigned)cp);
    if (bytes_push(&m->join, (char)byte) < 0) return merges_fail(m, "out of memory");
  }
  if (!bpe_map_get(&m->vocab->ids, m->join.v + start, m->join.len - start, &id))
    return merges_fail(m, "\"%.*s\" is no token of encoder.json", (int)len, s);
  return 0;
}

/* key = join with ',' after its first first_len bytes. */
static int merges_key(Merges *m, size_t first_len) {
  m->key.len = 0;
  for (size_t i = 0; i <= m->join.len; i++) {
    if (i == first_len && bytes_push(&m->key, ',') < 0) return -1;
    if (i < m->join.len && bytes_push(&m->key, m->join.v[i]) < 0) return -1;
  }
  return 0;
}

/* One merge line, s[0..len) without its newline, of the given rank. */
static int merges_line(Merges *m, const char *s, size_t len, BpeMap *ranks, int32_t rank) {
  const char *space = memchr(s, ' ', len);
  size_t first_len = space ? (size_t)(space - s) : 0, second_len = len - first_len - 1;
  if (!space || first_len == 0 || second_len == 0 || memchr(space + 1, ' ', second_len))
    return merges_fail(m, "expected two tokens joined by one space");
  m->join.len = 0;
  if (merges_token(m, s, first_len) < 0) return -1;
  size_t first_bytes = m->join.len;
  if (merges_token(m, space + 1, second_len) < 0) return -1;
  int32_t id;
  if (!bpe_map_get(&m->vocab->ids, m->join.v, m->join.len, &id))
    return merges_fail(m, "\"%.*s%.*s\" (the two joined) is no token of encoder.json",
                       (int)first_len, s, (int)second_len, space + 1);
  if (merges_key(m, first_bytes) < 0 || bpe_map_put(ranks, m->key.v, m->key.len, rank) < 0)
    return merges_fail(m, "out of memory");
  return 0;
}

/* The header line, then the merges, ranked from 0 in the order of the file. */
static int merges_lines(Merges *m, const char *text, size_t len, BpeMap *ranks) {
  const char *header = "#version";
  m->line = 1;
  if (len < strlen(header) || memcmp(text, header, strlen(header)) != 0)
    return merges_fail(m, "expected the \"%s\" line that starts vocab.bpe", header);
  for (size_t pos = 0; pos < len; m->line++) {
    const char *s = text + pos, *newline = memchr(s, '\n', len - pos);
    if (!newline) return merges_fail(m, "no newline at the end of the file");
    size_t n = (size_t)(newline - s);
    pos += n + 1;
    if (m->line == 1) continue;
    if (m->line - 2 > INT32_MAX) return merges_fail(m, "too many merges");
    if (merges_line(m, s, n, ranks, (int32_t)(m->line - 2)) < 0) return -1;
  }
  return 0;
}

int bpe_read_merges(const char *path, const BpeVocab *vocab, BpeMap *ranks, char *err,
                    size_t errlen) {
  *ranks = (BpeMap){0};
  size_t len;
  char *text = gpt2_read_file(path, &len, err, errlen);
  if (!text) return -1;
  Merges m = {.path = path, .err = err, .errlen = errlen, .vocab = vocab};
  standin_table(m.standin);
  int rc = merges_lines(&m, text, len, ranks);
  free(text), free(m.join.v), free(m.key.v);
  if (rc < 0) bpe_map_free(ranks);
  return rc;
}
