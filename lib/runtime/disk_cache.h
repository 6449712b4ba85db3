/* disk_cache.h — compiled kernels kept on disk, so that a second process
 * running the same program compiles nothing (docs/compile.md, "The disk
 * cache").
 *
 * In: a key (text naming everything that decides the code: uopjit's and
 * LLVM's versions, the target and its features, the kernel's canonical
 * text; the caller builds it) and the compiled bytes. Out: the bytes of an
 * earlier process for the same key. An entry is one file
 * `<folder>/kernels/<32 hex>.ujk` holding the key itself and a checksum:
 * a file that is short, corrupt or of another key is a miss (reported
 * under UJ_DEBUG), which the compile that follows replaces; written to a temporary file
 * and renamed, so concurrent processes see whole entries or none; the
 * folder is kept under UJ_CACHE_MAX_MB (default 1024), oldest used first
 * out. UJ_CACHE=0 turns it off. Nothing here fails a compile: a cache that
 * cannot be read or written is a cache that misses. */
#ifndef UJ_RUNTIME_DISK_CACHE_H
#define UJ_RUNTIME_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "llvm/signature.h"
#include "llvm/target.h"
#include "runtime/device.h"

/* The folder of uopjit's caches joined with name: $UJ_CACHE_DIR/name,
 * else $XDG_CACHE_HOME/uopjit/name, else $HOME/.cache/uopjit/name; ""
 * when none is known or it does not fit. */
void disk_cache_path(char *out, size_t size, const char *name);
/* mkdir -p of the folders above path (errors show when it is opened). */
void disk_cache_make_parents(const char *path);

/* The key of a kernel compiled for t: this build (disk_cache_build_id:
 * its ELF build id), uj_version (uopjit's version, the LLVM loaded at run
 * time), what the code is (`what`: "object", "ptx NAME"), the target's
 * triple, CPU or arch and features, and the kernel's canonical text.
 * Malloc'd, its length in *len; NULL with the error set. */
char *disk_cache_key(Ctx *ctx, const UOp *kernel, const Target *t, const char *what, size_t *len);
/* This build of uopjit: the GNU build id of the object its code is in, as
 * hex (build_id.c). */
const char *disk_cache_build_id(void);

/* UJ_CACHE is not 0/off/no/false, a folder is known, and this thread
 * does not skip the cache. */
bool disk_cache_on(void);
/* While on, this thread's compiles neither read nor write the disk cache
 * (BEAM's candidates: compiled to be timed, then dropped). */
void disk_cache_skip(bool on);
/* The entry of key[0..keylen): true with its bytes malloc'd in *data,
 * *n; false on a miss. */
bool disk_cache_get(const char *key, size_t keylen, void **data, size_t *n);
/* Stores data[0..n) as key's entry (best effort); every 32nd put of a
 * process (the 32nd, 64th, ...) trims the folder. */
void disk_cache_put(const char *key, size_t keylen, const void *data, size_t n);
/* The folder brought under UJ_CACHE_MAX_MB: the entries used longest ago
 * removed until it holds 3/4 of that; temporary files that processes left
 * more than 10 minutes ago removed too. */
void disk_cache_trim(void);

/* A GPU backend's code for kernel on t: `what` names it and the function
 * inside ("ptx E_64_16", "code object E_64_16"), and is part of the key.
 * From the disk cache when an entry has it (*sig then built from the
 * kernel, *loaded set) and `fresh` is false, else make(arg, len) compiles
 * it (make(d, kernel, program, len), which fills program's signature *sig)
 * and the bytes are stored (over an entry the driver refused, with
 * fresh). malloc'd, *len bytes; NULL with the error set. */
typedef char *(*CodeMaker)(Device *d, const UOp *kernel, void *program, size_t *len);
char *disk_cache_code(Device *d, const UOp *kernel, const Target *t, const char *what, bool fresh, KernelSig *sig,
                      CodeMaker make, void *program, size_t *len, bool *loaded);

#endif
