/* driver.h — a GPU driver's library opened at run time (backends/cuda,
 * backends/amd): the path from an environment variable or the default,
 * dlopen'ed with its symbols local. */
#ifndef UJ_RUNTIME_DRIVER_H
#define UJ_RUNTIME_DRIVER_H

#include <stddef.h>

/* The library named by the environment variable env (unset or empty:
 * fallback), or NULL with "cannot open the WHAT (dlerror)" in why;
 * *path: the name tried. */
void *driver_open(const char *env, const char *fallback, const char *what, const char **path, char *why, size_t size);

#endif
