/* json.h — a strict, pull-style JSON reader (json.c).
 *
 * In: the bytes of one JSON text (RFC 8259). The caller walks it value by
 * value, saying what it expects next (an object, a string, an unsigned
 * integer, any value to skip), so a document of a known schema is
 * checked as it is read and nothing but what the caller keeps is
 * allocated: there is no tree.
 *
 * Strict: the grammar of RFC 8259 and no more (no comments, no trailing
 * commas, no single quotes, no leading zeros, no NaN), strings of valid
 * UTF-8 with no raw control characters, \u escapes whose surrogates pair
 * up, nesting at most JSON_MAX_DEPTH deep.
 *
 * Errors: the first one sticks: false from every call after it, and
 * r->err holds "at byte N: message" (N counted from r->base, the text's
 * offset in its file). */
#ifndef UJ_JSON_H
#define UJ_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { JSON_MAX_DEPTH = 128 };

typedef struct JsonReader {
  const char *text;
  size_t len, pos; /* text[0..len); the cursor */
  size_t base;     /* added to positions in messages */
  bool failed;
  size_t err_at; /* the first error's position: base + its offset in text */
  char err[384];
} JsonReader;

/* A reader at the start of text[0..len); base: where text starts in its file. */
JsonReader json_reader(const char *text, size_t len, size_t base);
/* false and "at byte N: message" in r->err (N: base + at); the first error sticks. */
bool json_fail(JsonReader *r, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Skips JSON whitespace (space, tab, LF, CR); true when the cursor is then at c. */
bool json_peek(JsonReader *r, char c);
/* What is at the cursor (after whitespace), as words for a message: "a
 * string", "a number", "an object", "an array", "true", "false", "null",
 * "the end", "'}'" (or ']', ',', ':'), else "a character that starts no
 * JSON value". A static string. */
const char *json_kind(JsonReader *r);
/* Consumes '{' or '[' (open), else fails saying what was expected (what). */
bool json_open(JsonReader *r, char open, const char *what);
/* Before each element of an array or member of an object opened by
 * json_open(r, close == '}' ? '{' : '['): i is the number read so far.
 * *more: another follows (its ',' consumed), else the close was consumed. */
bool json_next(JsonReader *r, char close, size_t i, bool *more);
/* A member's key and its ':'. *key: malloc'd, decoded, NUL-terminated
 * (may hold NULs: *len counts the bytes); *at: where the key starts. */
bool json_key(JsonReader *r, char **key, size_t *len, size_t *at);
/* A string value, decoded as json_key's. */
bool json_string(JsonReader *r, char **s, size_t *len);
/* A number that is an integer in [0, max]: a sign, a fraction or an
 * exponent is refused ("what: -3 is negative"), as is anything past max. */
bool json_uint(JsonReader *r, const char *what, uint64_t max, uint64_t *out);
/* Any one value, checked and dropped. */
bool json_skip(JsonReader *r);
/* Only whitespace is left. */
bool json_end(JsonReader *r);
/* Whether s[0..len) is valid UTF-8 (no overlong forms, no surrogates,
 * nothing past U+10FFFF). */
bool json_utf8_valid(const char *s, size_t len);

#endif
