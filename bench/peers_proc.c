/* peers_proc.c — bench/peers.py as a child process (bench_peers.h).
 *
 * In: the Python interpreter and the script. Out: a PeerProc whose
 * commands go down one pipe and whose replies come up another, one line
 * each (the protocol is in peers.py's header); what imported (NumPy,
 * PyTorch) and their versions. The child's stderr is ours. When python
 * cannot start or stops answering, every call fails and the peers are
 * reported absent. SIGPIPE must be ignored by the caller. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_peers.h"

enum { REPLY_MAX = 512 };

/* In the child: stdin from to_child, stdout to from_child, then exec. */
static void child_exec(const int to_child[2], const int from_child[2], const char *python, const char *script) {
  dup2(to_child[0], STDIN_FILENO);
  dup2(from_child[1], STDOUT_FILENO);
  close(to_child[0]), close(to_child[1]), close(from_child[0]), close(from_child[1]);
  execl(python, python, script, (char *)NULL);
  fprintf(stderr, "bench_peers: cannot run %s: ", python);
  perror(NULL);
  _exit(127);
}

/* "hello numpy=V torch=V": the version of name, or "absent". */
static bool hello_version(const char *reply, const char *name, char *out, size_t n) {
  const char *at = strstr(reply, name);
  snprintf(out, n, "absent");
  if (!at) return false;
  at += strlen(name);
  size_t len = strcspn(at, " ");
  snprintf(out, n, "%.*s", (int)len, at);
  return strcmp(out, "absent") != 0;
}

bool peerproc_start(PeerProc *p, const char *python, const char *script) {
  *p = (PeerProc){.pid = -1};
  snprintf(p->numpy_version, sizeof p->numpy_version, "absent");
  snprintf(p->torch_version, sizeof p->torch_version, "absent");
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0) return perror("bench_peers: pipe"), false;
  if (pipe(from_child) != 0) return close(to_child[0]), close(to_child[1]), perror("bench_peers: pipe"), false;
  fflush(NULL);
  p->pid = fork();
  if (p->pid == 0) child_exec(to_child, from_child, python, script);
  close(to_child[0]), close(from_child[1]);
  p->to = p->pid > 0 ? fdopen(to_child[1], "w") : NULL;
  p->from = p->pid > 0 ? fdopen(from_child[0], "r") : NULL;
  if (!p->to || !p->from) {
    perror("bench_peers: fork");
    peerproc_stop(p);
    return false;
  }
  char reply[REPLY_MAX];
  if (!peerproc_ask(p, "hello", reply, sizeof reply) || strncmp(reply, "hello", 5)) {
    fprintf(stderr, "bench_peers: %s %s does not answer; NumPy and PyTorch are absent\n", python, script);
    peerproc_stop(p);
    return false;
  }
  p->numpy = hello_version(reply, "numpy=", p->numpy_version, sizeof p->numpy_version);
  p->torch = hello_version(reply, "torch=", p->torch_version, sizeof p->torch_version);
  return true;
}

bool peerproc_ask(PeerProc *p, const char *cmd, char *reply, size_t n) {
  reply[0] = 0;
  if (!p->to || !p->from) return false;
  if (fprintf(p->to, "%s\n", cmd) < 0 || fflush(p->to) != 0) return false;
  if (!fgets(reply, (int)n, p->from)) return false;
  reply[strcspn(reply, "\n")] = 0;
  return true;
}

double peerproc_run(PeerProc *p, const char *peer, int threads) {
  char cmd[64], reply[REPLY_MAX];
  snprintf(cmd, sizeof cmd, "run %s %d", peer, threads);
  if (!peerproc_ask(p, cmd, reply, sizeof reply)) return -1;
  char *end;
  double ms = strncmp(reply, "ms ", 3) ? -1 : strtod(reply + 3, &end);
  if (ms < 0) fprintf(stderr, "bench_peers: %s: %s\n", cmd, reply);
  return ms;
}

void peerproc_stop(PeerProc *p) {
  if (p->to) fprintf(p->to, "quit\n"), fclose(p->to);
  if (p->from) fclose(p->from);
  while (p->pid > 0 && waitpid(p->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  p->to = p->from = NULL;
  p->pid = -1;
}
