/* api.c — opening the HSA runtime at run time (api.h): dlopen, then each
 * function by name. */
#define _DEFAULT_SOURCE /* dlopen's RTLD_LOCAL under C11 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amd/api.h"
#include "runtime/driver.h"

bool hsa_api_open(HsaApi *api, char *why, size_t size) {
  *api = (HsaApi){0};
  const char *path;
  if (!(api->library = driver_open("UJ_HSA_LIBRARY", "libhsa-runtime64.so.1", "HSA runtime", &path, why, size))) return false;
  const char *missing = NULL;
#define HSA_API_RESOLVE(ret, name, args)                     \
  if (!missing) {                                            \
    void *sym = dlsym(api->library, #name);                  \
    if (sym) memcpy(&api->name, &sym, sizeof api->name);     \
    else missing = #name;                                    \
  }
  HSA_API_FUNCTIONS(HSA_API_RESOLVE)
#undef HSA_API_RESOLVE
  if (!missing) return true;
  snprintf(why, size, "%s has no %s", path, missing);
  hsa_api_close(api);
  return false;
}

void hsa_api_close(HsaApi *api) {
  if (api->library) dlclose(api->library);
  *api = (HsaApi){0};
}

const char *hsa_error_text(const HsaApi *api, hsa_status s, char *buf, size_t size) {
  const char *text = NULL;
  if (api->hsa_status_string && api->hsa_status_string(s, &text) == HSA_OK && text) snprintf(buf, size, "%s", text);
  else snprintf(buf, size, "HSA status 0x%x", (unsigned)s);
  return buf;
}
