/* file.h — a whole file read into memory, the one way the library does it
 * (the disk cache's entries, the AMD linker's output).
 *
 * In: a path and the most bytes it may hold. Out: its bytes, malloc'd,
 * with a NUL after them (text may be used as a string), their count in
 * *len; NULL when it cannot be opened, is no regular file, is longer than
 * max, or a read fails, with errno saying why (ENOENT: absent; EFBIG: too
 * long). */
#ifndef UJ_UOP_FILE_H
#define UJ_UOP_FILE_H

#include <stddef.h>

char *file_read(const char *path, size_t max, size_t *len);

#endif
