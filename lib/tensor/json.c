/* json.c — a strict, pull-style JSON reader (json.h).
 *
 * In: one JSON text and a caller that asks for the values it expects.
 * Out: decoded strings (malloc'd), unsigned integers, values skipped after
 * a check; or the first error, with its byte offset.
 *
 * The grammar is RFC 8259's, read with a cursor: whitespace is skipped
 * before each token; a string is scanned once for its closing quote (to
 * size its copy), then decoded; a number is checked against the grammar
 * before its digits are read. Nothing recurses except json_skip, which
 * stops at JSON_MAX_DEPTH. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/json.h"

JsonReader json_reader(const char *text, size_t len, size_t base) {
  return (JsonReader){.text = text, .len = len, .base = base};
}

bool json_fail(JsonReader *r, size_t at, const char *fmt, ...) {
  if (r->failed) return false;
  char msg[sizeof r->err - 32];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(r->err, sizeof r->err, "at byte %zu: %s", r->base + at, msg);
  r->err_at = r->base + at;
  r->failed = true;
  return false;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void skip_space(JsonReader *r) {
  while (r->pos < r->len && is_space(r->text[r->pos])) r->pos++;
}

bool json_peek(JsonReader *r, char c) {
  if (r->failed) return false;
  skip_space(r);
  return r->pos < r->len && r->text[r->pos] == c;
}

const char *json_kind(JsonReader *r) {
  skip_space(r);
  if (r->pos == r->len) return "the end";
  char c = r->text[r->pos];
  if (c == '-' || (c >= '0' && c <= '9')) return "a number";
  switch (c) {
  case '"': return "a string";
  case '{': return "an object";
  case '[': return "an array";
  case 't': return "true";
  case 'f': return "false";
  case 'n': return "null";
  case '}': return "'}'";
  case ']': return "']'";
  case ',': return "','";
  case ':': return "':'";
  default: return "a character that starts no JSON value";
  }
}

bool json_open(JsonReader *r, char open, const char *what) {
  if (json_peek(r, open)) return r->pos++, true;
  return json_fail(r, r->pos, "expected %s, found %s", what, json_kind(r));
}

bool json_next(JsonReader *r, char close, size_t i, bool *more) {
  *more = false;
  if (json_peek(r, close)) return r->pos++, true;
  if (r->failed) return false;
  if (i > 0) {
    if (!json_peek(r, ','))
      return json_fail(r, r->pos, "expected ',' or '%c', found %s", close, json_kind(r));
    r->pos++;
    if (json_peek(r, close)) return json_fail(r, r->pos, "a ',' before '%c'", close);
  }
  *more = true;
  return !r->failed;
}

/* ---- strings ---- */

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
  if (len == 0 || s[0] > 0xF4 || n < len)
    return 0; /* a continuation byte, overlong 2-byte, past U+10FFFF */
  for (size_t k = 1; k < len; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  if (len == 3 && s[0] == 0xE0 && s[1] < 0xA0) return 0;  /* overlong */
  if (len == 3 && s[0] == 0xED && s[1] >= 0xA0) return 0; /* a surrogate */
  if (len == 4 && s[0] == 0xF0 && s[1] < 0x90) return 0;  /* overlong */
  if (len == 4 && s[0] == 0xF4 && s[1] >= 0x90) return 0; /* past U+10FFFF */
  return len;
}

bool json_utf8_valid(const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0, k; i < len; i += k)
    if ((k = utf8_seq(u + i, len - i)) == 0) return false;
  return true;
}

static size_t utf8_put(char *out, uint32_t cp) {
  if (cp < 0x80) return out[0] = (char)cp, 1;
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F)), out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The four hex digits after "\u" at text[at]; false when they are not. */
static bool hex4(const JsonReader *r, size_t at, uint32_t *out) {
  uint32_t v = 0;
  if (r->len - at < 6 || r->text[at] != '\\' || r->text[at + 1] != 'u') return false;
  for (size_t k = at + 2; k < at + 6; k++) {
    char c = r->text[k];
    int d = c >= '0' && c <= '9'                 ? c - '0'
            : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                 : -1;
    if (d < 0) return false;
    v = v << 4 | (uint32_t)d;
  }
  *out = v;
  return true;
}

/* A \u escape at the cursor (a surrogate pair takes two), as UTF-8 into out. */
static bool unicode_escape(JsonReader *r, char *out, size_t *n) {
  uint32_t cp, lo;
  size_t at = r->pos;
  if (!hex4(r, at, &cp)) return json_fail(r, at, "a \\u escape without four hex digits");
  r->pos += 6;
  if (cp >= 0xDC00 && cp <= 0xDFFF)
    return json_fail(r, at, "\\u%04X is a low surrogate with no high one before it", (unsigned)cp);
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (!hex4(r, r->pos, &lo) || lo < 0xDC00 || lo > 0xDFFF)
      return json_fail(r, at, "\\u%04X is a high surrogate with no low one after it", (unsigned)cp);
    r->pos += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  *n += utf8_put(out + *n, cp);
  return true;
}

/* An escape at the cursor ('\\' and what follows) into out. */
static bool escape(JsonReader *r, char *out, size_t *n) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  char c = r->pos + 1 < r->len ? r->text[r->pos + 1] : '\0';
  if (c == 'u') return unicode_escape(r, out, n);
  const char *k = c ? strchr(from, c) : NULL;
  if (!k)
    return json_fail(r, r->pos, "unknown escape '\\%c' in a string",
                     c >= ' ' && c <= '~' ? c : '?');
  out[(*n)++] = to[k - from];
  r->pos += 2;
  return true;
}

/* Where the string opened at the cursor closes (its '"'), or len. */
static size_t string_close(const JsonReader *r) {
  size_t i = r->pos + 1;
  while (i < r->len && r->text[i] != '"') i += r->text[i] == '\\' ? 2 : 1;
  return i < r->len ? i : r->len;
}

/* One character of a string's body at the cursor into out. */
static bool string_char(JsonReader *r, char *out, size_t *n) {
  const unsigned char *u = (const unsigned char *)r->text + r->pos;
  if (*u == '\\') return escape(r, out, n);
  if (*u < 0x20)
    return json_fail(r, r->pos, "control character 0x%02X in a string (it must be escaped)", *u);
  size_t k = utf8_seq(u, r->len - r->pos);
  if (k == 0) return json_fail(r, r->pos, "invalid UTF-8 in a string");
  memcpy(out + *n, u, k);
  *n += k;
  r->pos += k;
  return true;
}

bool json_string(JsonReader *r, char **s, size_t *len) {
  if (!json_peek(r, '"')) return json_fail(r, r->pos, "expected a string, found %s", json_kind(r));
  size_t at = r->pos, close = string_close(r);
  if (close == r->len) return json_fail(r, at, "a string is not closed");
  char *out = malloc(close - at); /* the body, at most as long decoded, and a NUL */
  if (!out) return json_fail(r, at, "out of memory for a string of %zu bytes", close - at - 1);
  size_t n = 0;
  r->pos++;
  while (r->pos < close && string_char(r, out, &n)) {}
  if (r->failed) return free(out), false;
  out[n] = '\0';
  r->pos = close + 1;
  *s = out, *len = n;
  return true;
}

bool json_key(JsonReader *r, char **key, size_t *len, size_t *at) {
  skip_space(r);
  *at = r->pos;
  if (!json_peek(r, '"'))
    return json_fail(r, r->pos, "expected a string key, found %s", json_kind(r));
  if (!json_string(r, key, len)) return false;
  if (json_peek(r, ':')) return r->pos++, true;
  free(*key);
  return json_fail(r, r->pos, "expected ':' after a key, found %s", json_kind(r));
}

/* ---- numbers, literals, any value ---- */

static size_t digits(const JsonReader *r, size_t i) {
  while (i < r->len && r->text[i] >= '0' && r->text[i] <= '9') i++;
  return i;
}

/* The number at the cursor checked against the grammar; *end: past it;
 * *integral: no fraction or exponent. */
static bool number_scan(JsonReader *r, size_t *end, bool *integral) {
  size_t i = r->pos + (r->text[r->pos] == '-'), d;
  if (i == r->len || r->text[i] < '0' || r->text[i] > '9')
    return json_fail(r, r->pos, "a '-' without digits");
  d = digits(r, i);
  if (r->text[i] == '0' && d > i + 1) return json_fail(r, r->pos, "a number with a leading zero");
  i = d;
  *integral = true;
  if (i < r->len && r->text[i] == '.') {
    if ((d = digits(r, i + 1)) == i + 1) return json_fail(r, i, "a '.' without digits after it");
    i = d, *integral = false;
  }
  if (i < r->len && (r->text[i] | 32) == 'e') {
    i += i + 1 < r->len && (r->text[i + 1] == '+' || r->text[i + 1] == '-');
    if ((d = digits(r, i + 1)) == i + 1) return json_fail(r, i, "an exponent without digits");
    i = d, *integral = false;
  }
  *end = i;
  return true;
}

bool json_uint(JsonReader *r, const char *what, uint64_t max, uint64_t *out) {
  skip_space(r);
  size_t at = r->pos, end;
  bool integral;
  if (r->failed) return false;
  if (at == r->len || (r->text[at] != '-' && (r->text[at] < '0' || r->text[at] > '9')))
    return json_fail(r, at, "%s: expected an integer, found %s", what, json_kind(r));
  if (!number_scan(r, &end, &integral)) return false;
  int n = end - at > 40 ? 40 : (int)(end - at); /* the number in messages */
  if (r->text[at] == '-') return json_fail(r, at, "%s: %.*s is negative", what, n, r->text + at);
  if (!integral) return json_fail(r, at, "%s: %.*s is not an integer", what, n, r->text + at);
  uint64_t v = 0;
  for (size_t i = at; i < end; i++) {
    unsigned d = (unsigned)(r->text[i] - '0');
    if (v > max / 10 || d > max - v * 10)
      return json_fail(r, at, "%s: %.*s is too large (at most %llu)", what, n, r->text + at,
                       (unsigned long long)max);
    v = v * 10 + d;
  }
  r->pos = end;
  *out = v;
  return true;
}

static bool literal(JsonReader *r, const char *word) {
  size_t n = strlen(word);
  if (r->len - r->pos < n || memcmp(r->text + r->pos, word, n) != 0)
    return json_fail(r, r->pos, "expected a value, found a misspelt '%s'", word);
  r->pos += n;
  return true;
}

static bool skip_value(JsonReader *r, unsigned depth);

/* The rest of an array or object opened at depth. */
static bool skip_container(JsonReader *r, char close, unsigned depth) {
  size_t at = r->pos - 1, keylen, keyat;
  char *key;
  bool more = true;
  if (depth >= JSON_MAX_DEPTH)
    return json_fail(r, at, "nested more than %d deep", (int)JSON_MAX_DEPTH);
  for (size_t i = 0; json_next(r, close, i, &more) && more; i++) {
    if (close == '}' && !json_key(r, &key, &keylen, &keyat)) return false;
    if (close == '}') free(key);
    if (!skip_value(r, depth + 1)) return false;
  }
  return !r->failed;
}

static bool skip_value(JsonReader *r, unsigned depth) {
  size_t end;
  bool integral;
  skip_space(r);
  if (r->failed) return false;
  if (r->pos == r->len) return json_fail(r, r->pos, "expected a value, found the end");
  char c = r->text[r->pos], *s;
  switch (c) {
  case '{': r->pos++; return skip_container(r, '}', depth);
  case '[': r->pos++; return skip_container(r, ']', depth);
  case '"': return json_string(r, &s, &end) && (free(s), true);
  case 't': return literal(r, "true");
  case 'f': return literal(r, "false");
  case 'n': return literal(r, "null");
  default: break;
  }
  if (c != '-' && (c < '0' || c > '9'))
    return json_fail(r, r->pos, "expected a value, found %s", json_kind(r));
  if (!number_scan(r, &end, &integral)) return false;
  r->pos = end;
  return true;
}

bool json_skip(JsonReader *r) { return skip_value(r, 0); }

bool json_end(JsonReader *r) {
  skip_space(r);
  if (r->failed) return false;
  if (r->pos == r->len) return true;
  return json_fail(r, r->pos, "expected only whitespace after the value, found %s", json_kind(r));
}
