/* file.c — file_read (file.h). */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uop/file.h"

char *file_read(const char *path, size_t max, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) != 0) goto done;
  if (!S_ISREG(st.st_mode) || st.st_size < 0 || (size_t)st.st_size > max) {
    errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
    goto done;
  }
  size_t n = (size_t)st.st_size, got = 0;
  if (!(buf = malloc(n + 1))) goto done;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO; /* shorter than fstat said: changed under us */
      free(buf), buf = NULL;
      goto done;
    }
    got += (size_t)r;
  }
  buf[n] = '\0', *len = n;
done:;
  int saved = errno;
  close(fd);
  errno = saved;
  return buf;
}
