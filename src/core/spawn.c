/* Running the tools executors drive (sbatch, squeue, ssh, scp) and the
 * build's external quantiser: fork and
 * exec with the output captured, a time limit, and messages that show the
 * command as a shell would take it. */
#include "core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool mb__exec_shell_quote(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t need = *len + 4 * strlen(s) + 3;
  if (need + 1 > *cap) {
    size_t grown = MB_MAX(need + 1, *cap * 2);
    char *p = realloc(*buf, grown);
    if (!p)
      return false;
    *buf = p;
    *cap = grown;
  }
  char *o = *buf + *len;
  *o++ = '\'';
  for (; *s; s++) {
    if (*s == '\'') {
      memcpy(o, "'\\''", 4); /* close, escaped quote, reopen */
      o += 4;
    } else {
      *o++ = *s;
    }
  }
  *o++ = '\'';
  *o = '\0';
  *len = (size_t)(o - *buf);
  return true;
}

void mb__exec_last_line(const char *text, char *buf, size_t size) {
  buf[0] = '\0';
  if (!text)
    return;
  const char *end = text + strlen(text);
  while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
    end--;
  const char *start = end;
  while (start > text && start[-1] != '\n')
    start--;
  snprintf(buf, size, "%.*s", (int)(end - start), start);
}

/* A word a shell takes as it is: no quoting needed. '=' is plain except in
 * the first word, where the shell would take NAME=VALUE as an assignment. */
static bool plain_word(const char *w, bool first) {
  return w[0] != '\0' &&
         strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
                   "RSTUVWXYZ0123456789-_=./:,@%+") == strlen(w) &&
         !(first && strchr(w, '='));
}

char *mb__exec_argv_quoted(char *const *argv) {
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (int i = 0; argv[i]; i++) {
    size_t n = strlen(argv[i]);
    if (len + n + 2 > cap) {
      size_t grown = MB_MAX(cap * 2, len + n + 64);
      char *p = realloc(text, grown);
      if (!p)
        goto fail;
      text = p;
      cap = grown;
    }
    if (i)
      text[len++] = ' ';
    text[len] = '\0';
    if (plain_word(argv[i], i == 0)) {
      memcpy(text + len, argv[i], n + 1);
      len += n;
    } else if (!mb__exec_shell_quote(&text, &len, &cap, argv[i])) {
      goto fail;
    }
  }
  return text ? text : mb__strdup("");
fail:
  free(text);
  return NULL;
}

const char *mb__exec_argv_string(char *const *argv) {
  static char text[2048];
  static const char cut[] = " [...]";
  char *full = mb__exec_argv_quoted(argv);
  size_t len = full ? strlen(full) : 0;
  if (!full) {
    snprintf(text, sizeof text, "%s [...]", argv[0]);
  } else if (len < sizeof text) {
    memcpy(text, full, len + 1);
  } else {
    /* Cut at a space outside quotes, never inside a quoted word: a
     * shortened command shows where it was cut instead of reading as
     * another command. */
    size_t end = 0;
    bool quoted = false;
    for (size_t i = 0; i + sizeof cut < sizeof text; i++) {
      if (full[i] == '\\' && !quoted)
        i++; /* the \' between two quoted parts */
      else if (full[i] == '\'')
        quoted = !quoted;
      else if (full[i] == ' ' && !quoted)
        end = i;
    }
    memcpy(text, full, end);
    memcpy(text + end, end ? cut : cut + 1, end ? sizeof cut : sizeof cut - 1);
  }
  free(full);
  return text;
}

mb_status mb__exec_capture(char *const *argv, double timeout_s, int *exit_out,
                           char **out_text, mb_error *err) {
  int fds[2], errpipe[2];
  char *text = NULL;
  size_t len = 0, cap = 0;
  *exit_out = -1;
  if (out_text)
    *out_text = NULL;
  if (pipe(fds) != 0)
    return mb__error(err, MB_STATUS_IO, "%s: pipe: %s", argv[0],
                     strerror(errno));
  /* A second pipe, closed on exec, tells a failed exec from a command
   * that ran and failed. */
  if (pipe(errpipe) != 0) {
    close(fds[0]);
    close(fds[1]);
    return mb__error(err, MB_STATUS_IO, "%s: pipe: %s", argv[0],
                     strerror(errno));
  }
  fcntl(errpipe[1], F_SETFD, FD_CLOEXEC);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    close(errpipe[0]);
    close(errpipe[1]);
    return mb__error(err, MB_STATUS_IO, "%s: fork: %s", argv[0],
                     strerror(errno));
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
      dup2(null, STDIN_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(errpipe[0]);
    setpgid(0, 0); /* a timeout kills the command and its children */
    /* The command keeps none of the caller's other descriptors (a worker's
     * pipe to the engine would otherwise stay open after the worker died),
     * and dies with the caller. */
#ifdef SYS_close_range
    syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
#endif
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execvp(argv[0], argv);
    int e = errno;
    if (write(errpipe[1], &e, sizeof e) < 0)
      _exit(127);
    _exit(127);
  }
  close(fds[1]);
  close(errpipe[1]);
  int exec_errno = 0;
  ssize_t got = read(errpipe[0], &exec_errno, sizeof exec_errno);
  close(errpipe[0]);
  if (got == (ssize_t)sizeof exec_errno) {
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return mb__error(err, MB_STATUS_NOT_FOUND, "cannot run %s: %s", argv[0],
                     strerror(exec_errno));
  }
  double deadline = timeout_s > 0 ? now_s() + timeout_s : 0;
  bool timed_out = false;
  for (;;) {
    struct pollfd p = {fds[0], POLLIN, 0};
    int wait_ms = -1;
    if (deadline > 0) {
      double left = deadline - now_s();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = (int)(left * 1000) + 1;
    }
    int r = poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue; /* the deadline is checked above */
    if (cap - len < 4096) {
      char *grown = realloc(text, cap + 65536);
      if (!grown)
        break;
      text = grown;
      cap += 65536;
    }
    ssize_t n = read(fds[0], text + len, cap - len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(fds[0]);
  if (timed_out)
    kill(-pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
    ;
  if (text)
    text[len] = '\0';
  if (!timed_out && WIFEXITED(wstatus))
    *exit_out = WEXITSTATUS(wstatus);
  if (out_text)
    *out_text = text;
  else
    free(text);
  if (timed_out)
    return mb__error(err, MB_STATUS_UNAVAILABLE, "%s: no answer within %.0f s",
                     mb__exec_argv_string(argv), timeout_s);
  return MB_STATUS_OK;
}
