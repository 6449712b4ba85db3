/* fake_driver.h — what the tests of the GPU runtimes share (test_cuda,
 * test_amd): the reason a device does not open, and the counters of a
 * fake driver library (fake_cuda.c, fake_hsa.c) the runtime loads. */
#ifndef UJ_TEST_FAKE_DRIVER_H
#define UJ_TEST_FAKE_DRIVER_H

#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "uopjit/tensor.h"

/* The reason opening device name fails, or NULL when it opened. */
static inline const char *open_error(const char *name) {
  const char *why = NULL;
  uj_session *s = uj_session_new(name, &why);
  uj_session_free(s);
  return s ? NULL : why;
}

/* The fake library at path opened (the runtime's dlopen gets the same
 * one) and its function symbol() called: its counters; NULL after a
 * failed CHECK. *lib: the handle, to dlclose at the end. */
static inline const void *fake_stats(const char *path, const char *symbol, void **lib) {
  *lib = dlopen(path, RTLD_NOW);
  CHECK(*lib != NULL, "%s: %s", path, dlerror());
  const void *(*get)(void) = NULL;
  void *sym = *lib ? dlsym(*lib, symbol) : NULL;
  memcpy(&get, &sym, sizeof get);
  CHECK(!*lib || get, "%s has no %s", path, symbol);
  return get ? get() : NULL;
}

#endif
