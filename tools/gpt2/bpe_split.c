/* bpe_split.c — text into the pieces GPT-2's regex matches, by hand.
 *
 * In: bytes. Out: first the bytes made valid UTF-8 the way node decodes a
 * file (WHATWG: each maximal subpart of an ill-formed sequence becomes
 * U+FFFD), then, one at a time, the pieces that
 *
 *   /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu
 *
 * matches, one after the other. Every code point is a letter, a number, a
 * space or "other" (unicode_tables.c), so every position starts a match
 * and the pieces tile the text. At a position, in the regex's order:
 *   - "'" and one of s t re ve m ll d (lower case only): the contraction;
 *   - an optional U+0020, then a run of letters, of numbers or of others
 *     (the class of the first code point after the optional space);
 *   - a run of spaces: all of it at the end of the text, else all but its
 *     last code point (\s+(?!\S): that one goes with the word after it),
 *     unless the run is one code point long (then \s+ takes it). */
#include <stdlib.h>
#include <string.h>

#include "bpe_internal.h"

/* ---- valid UTF-8 ---- */

/* Well-formed UTF-8, Unicode's table 3-7: the lead bytes lead_lo..lead_hi,
 * then `follow` bytes, the first in lo..hi (which rules out overlong
 * forms, surrogates and code points past U+10FFFF), the rest in 80..BF. */
static const struct Utf8Form {
  unsigned char lead_lo, lead_hi, follow, lo, hi;
} utf8_forms[] = {
    {0x00, 0x7F, 0, 0x80, 0xBF}, {0xC2, 0xDF, 1, 0x80, 0xBF}, {0xE0, 0xE0, 2, 0xA0, 0xBF},
    {0xE1, 0xEC, 2, 0x80, 0xBF}, {0xED, 0xED, 2, 0x80, 0x9F}, {0xEE, 0xEF, 2, 0x80, 0xBF},
    {0xF0, 0xF0, 3, 0x90, 0xBF}, {0xF1, 0xF3, 3, 0x80, 0xBF}, {0xF4, 0xF4, 3, 0x80, 0x8F},
};

size_t bpe_utf8_decode(const char *text, size_t len, size_t pos, uint32_t *cp) {
  const unsigned char *s = (const unsigned char *)text;
  *cp = BPE_UTF8_INVALID;
  for (size_t f = 0; f < sizeof utf8_forms / sizeof utf8_forms[0]; f++) {
    const struct Utf8Form *form = &utf8_forms[f];
    if (s[pos] < form->lead_lo || s[pos] > form->lead_hi) continue;
    uint32_t c = s[pos] & (form->follow ? 0xFFu >> (form->follow + 2) : 0x7Fu); /* its payload */
    for (size_t i = 1; i <= form->follow; i++) {
      unsigned char lo = i == 1 ? form->lo : 0x80, hi = i == 1 ? form->hi : 0xBF;
      if (pos + i >= len || s[pos + i] < lo || s[pos + i] > hi) return i;
      c = c << 6 | (s[pos + i] & 0x3Fu);
    }
    *cp = c;
    return 1 + (size_t)form->follow;
  }
  return 1; /* 80..C1, F5..FF: never a lead byte */
}

/* text made valid into out (when not NULL): each ill-formed subpart
 * becomes EF BF BD. Returns the valid text's length. */
static size_t make_valid(const char *text, size_t len, char *out) {
  size_t n = 0;
  for (size_t pos = 0; pos < len;) {
    uint32_t cp;
    size_t k = bpe_utf8_decode(text, len, pos, &cp);
    const char *bytes = cp != BPE_UTF8_INVALID ? text + pos : "\xEF\xBF\xBD";
    size_t count = cp != BPE_UTF8_INVALID ? k : 3;
    if (out) memcpy(out + n, bytes, count);
    n += count, pos += k;
  }
  return n;
}

static bool is_valid(const char *text, size_t len) {
  uint32_t cp = 0;
  for (size_t pos = 0; cp != BPE_UTF8_INVALID && pos < len;)
    pos += bpe_utf8_decode(text, len, pos, &cp);
  return cp != BPE_UTF8_INVALID;
}

int bpe_utf8_valid(const char *text, size_t len, char **owned, size_t *owned_len) {
  *owned = NULL, *owned_len = 0;
  if (is_valid(text, len)) return 0;
  size_t n = make_valid(text, len, NULL);
  if (!(*owned = malloc(n))) return -1;
  *owned_len = make_valid(text, len, *owned);
  return 0;
}

/* ---- the pieces ---- */

static BpeCharClass class_of(uint32_t cp) {
  size_t lo = 0, hi = bpe_char_range_count; /* the range holding cp is in [lo, hi) if any */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cp < bpe_char_ranges[mid].first) hi = mid;
    else if (cp > bpe_char_ranges[mid].last) lo = mid + 1;
    else return bpe_char_ranges[mid].cls;
  }
  return BPE_CHAR_OTHER;
}

/* The class of the code point at s[pos] (valid UTF-8, pos < len); its end
 * in *next. */
static BpeCharClass class_at(const char *s, size_t len, size_t pos, size_t *next) {
  uint32_t cp;
  *next = pos + bpe_utf8_decode(s, len, pos, &cp);
  return class_of(cp);
}

/* The regex's first seven alternatives, in its order. */
static const char *const contractions[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};

/* The end of the contraction at s[pos], or 0 when there is none. */
static size_t contraction_end(const char *s, size_t len, size_t pos) {
  for (size_t i = 0; i < sizeof contractions / sizeof contractions[0]; i++) {
    size_t n = strlen(contractions[i]);
    if (n <= len - pos && memcmp(s + pos, contractions[i], n) == 0) return pos + n;
  }
  return 0;
}

/* The end of the run of code points of class cls that starts at pos. */
static size_t run_end(const char *s, size_t len, size_t pos, BpeCharClass cls) {
  while (pos < len) {
    size_t next;
    if (class_at(s, len, pos, &next) != cls) break;
    pos = next;
  }
  return pos;
}

/* \s+(?!\S)|\s+ at pos, a space: the run, less its last code point when
 * a non-space follows and the run is longer than one. */
static size_t spaces_end(const char *s, size_t len, size_t pos) {
  size_t last = pos, end = pos; /* the last space's start; the run's end */
  while (end < len) {
    size_t next;
    if (class_at(s, len, end, &next) != BPE_CHAR_SPACE) break;
    last = end, end = next;
  }
  return end == len || last == pos ? end : last;
}

size_t bpe_split_next(const char *s, size_t len, size_t pos) {
  size_t end = contraction_end(s, len, pos);
  if (end) return end;
  size_t body = s[pos] == ' ' && pos + 1 < len ? pos + 1 : pos; /* past " ?" */
  size_t next;
  BpeCharClass cls = class_at(s, len, body, &next);
  if (cls != BPE_CHAR_SPACE) return run_end(s, len, next, cls);
  return spaces_end(s, len, pos);
}
