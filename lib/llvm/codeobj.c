/* codeobj.c — ld.lld -shared on a temporary copy of the object (codeobj.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llvm/codeobj.h"
#include "uop/file.h"

extern char **environ;

#ifndef UJ_LLVM_BINDIR
#define UJ_LLVM_BINDIR "/usr/lib/llvm-19/bin"
#endif

static bool write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

#define CODEOBJ_MAX_BYTES ((size_t)1 << 30) /* a linked code object, at most */

/* ld.lld of our LLVM, else ld.lld-19 from PATH. */
static const char *linker_path(char *buf, size_t size) {
  snprintf(buf, size, "%s/ld.lld", UJ_LLVM_BINDIR);
  return access(buf, X_OK) == 0 ? buf : "ld.lld-19";
}

static bool run_linker(Ctx *ctx, const char *in, const char *out) {
  char path[512];
  const char *ld = linker_path(path, sizeof path);
  char *argv[] = {(char *)ld, "-shared", "--no-undefined", "-o", (char *)out, (char *)in, NULL};
  pid_t pid;
  int err = posix_spawnp(&pid, ld, NULL, NULL, argv, environ), status = 0;
  if (err) {
    ctx_set_error(ctx, "amdgpu: cannot run %s: %s (install lld-19)", ld, strerror(err));
    return false;
  }
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) continue;
  if (waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  ctx_set_error(ctx, "amdgpu: %s failed to link the code object (status %d)", ld, status);
  return false;
}

bool codeobj_link(Ctx *ctx, const char *obj, size_t n, char **out, size_t *len) {
  const char *tmp = getenv("TMPDIR");
  char dir[512], in[600], res[600];
  snprintf(dir, sizeof dir, "%s/uopjit-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    ctx_set_error(ctx, "amdgpu: cannot make a temporary directory %s: %s", dir, strerror(errno));
    return false;
  }
  snprintf(in, sizeof in, "%s/kernel.o", dir);
  snprintf(res, sizeof res, "%s/kernel.hsaco", dir);
  bool ok = write_file(in, obj, n);
  if (!ok) ctx_set_error(ctx, "amdgpu: cannot write %s", in);
  ok = ok && run_linker(ctx, in, res);
  *out = ok ? file_read(res, CODEOBJ_MAX_BYTES, len) : NULL;
  if (ok && !*out) ctx_set_error(ctx, "amdgpu: cannot read %s", res), ok = false;
  unlink(in), unlink(res), rmdir(dir);
  return ok;
}
