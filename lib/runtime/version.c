/* version.c — uj_version: what this build of uopjit is, in one line: its
 * version, the LLVM it runs on (asked at run time: a shared libLLVM can be
 * newer than the headers), the targets it compiles for and the devices it
 * opens. */
#include <stdio.h>

#include <llvm-c/Core.h>

#include "llvm/target.h"
#include "runtime/device.h"
#include "uopjit/uopjit.h"

#ifndef UJ_VERSION /* set by CMakeLists.txt from the project version */
#define UJ_VERSION "unknown"
#endif

const char *uj_version(void) {
  static _Thread_local char line[256];
  unsigned major = 0, minor = 0, patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  int n = snprintf(line, sizeof line, "uopjit %s (LLVM %u.%u.%u; targets:", UJ_VERSION, major, minor, patch);
  for (int k = 0; k < TARGET_COUNT && n > 0 && (size_t)n < sizeof line; k++)
    n += snprintf(line + n, sizeof line - (size_t)n, " %s", target_kind_names[k]);
  if (n > 0 && (size_t)n < sizeof line) snprintf(line + n, sizeof line - (size_t)n, "; devices: %s)", device_known);
  return line;
}
