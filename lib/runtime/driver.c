/* driver.c — opening a driver's library (driver.h). */
#define _DEFAULT_SOURCE /* dlopen's RTLD_LOCAL under C11 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/driver.h"

void *driver_open(const char *env, const char *fallback, const char *what, const char **path, char *why, size_t size) {
  const char *p = getenv(env);
  *path = p && *p ? p : fallback;
  void *lib = dlopen(*path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(why, size, "cannot open the %s (%s)", what, e ? e : *path);
  }
  return lib;
}
