/* build_id.c — which build of uopjit is running: the GNU build id of the
 * ELF object its code is in (the shared library, or the program a static
 * uopjit was linked into), as hex; the disk cache keys compiled code by it,
 * so code one build compiled is never loaded by another, even where both
 * call themselves the same version. Without a build id (a linker that
 * writes none), the object file's size and modification time stand in. */
#define _GNU_SOURCE /* dladdr, dl_iterate_phdr */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/disk_cache.h"

static char id[96];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Within PT_LOAD segments of the object holding this code: its build id note. */
static int find_note(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  uintptr_t self = (uintptr_t)&find_note;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && self >= start && self < start + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
      const unsigned char *name = p + sizeof *n, *desc = name + ((n->n_namesz + 3) & ~3u);
      if (desc + n->n_descsz > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
        for (size_t k = 0; k < n->n_descsz && 2 * k + 2 < sizeof id; k++) snprintf(id + 2 * k, 3, "%02x", desc[k]);
        return 1;
      }
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
  return 1; /* the object, but no note */
}

static void read_id(void) {
  dl_iterate_phdr(find_note, NULL);
  if (id[0]) return;
  Dl_info info;
  struct stat st;
  if (dladdr((void *)&read_id, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
    snprintf(id, sizeof id, "size %lld mtime %lld.%09ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec);
  else
    snprintf(id, sizeof id, "unknown");
}

const char *disk_cache_build_id(void) {
  pthread_once(&once, read_id);
  return id;
}
