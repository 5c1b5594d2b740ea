/* The SSH executor: the run's tasks on hosts reached with OpenSSH.
 *
 * check asks every host for `modelbench --version` (BatchMode: no password
 * prompts) and refuses a host that cannot be reached, has no modelbench,
 * or has another version (results would not compare). submit spreads the
 * tasks over the hosts round-robin and forks one worker process per host
 * that runs its tasks one after the other, so that two benchmarks never
 * share a machine. For each task the worker makes a temporary folder on
 * the host (mktemp), copies the model with its external data files and
 * every file option (--inputs, --calibration-inputs, --labels, --config)
 * there with scp, runs the remote `modelbench bench` with the run's
 * options, brings report.json back with scp and removes the folder.
 *
 * The worker leaves its outcome in the task folder: `exit` (bench's exit
 * code: done) or `failed` (why ssh or scp failed: the host dropped, a
 * copy failed); poll reads them. A host that drops fails its own tasks
 * only; --retries moves a failed task to the next host. */
#include "exec/exec.h"

#include "core/ir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SSH_CONNECT_TIMEOUT_S "10"
/* A copy or a command without an answer for this long has lost its host. */
#define SSH_COMMAND_TIMEOUT_S 3600

/* The worker processes this submitter started: which tasks each runs. A
 * task of the run that no worker of this process runs, and that has no
 * outcome, was left behind by a submitter that is gone. */
typedef struct host_worker {
  pid_t pid;
  int *tasks;
  int n_tasks;
} host_worker;
static host_worker *workers;
static int n_workers;
/* In a host worker: the socket of its master connection, which every
 * ssh and scp of the worker shares (OpenSSH's ControlMaster), so that a
 * task costs one connection, not seven; "" when there is none. It lies in
 * a folder of its own that mkdtemp made (0700, ours): whoever could place
 * a socket at a name we would use could answer our ssh commands in the
 * master's stead. A socket's path must fit sun_path (108 bytes) with the
 * 17 characters OpenSSH adds to a temporary name while it binds. */
static char control_dir[108];
static char control_path[sizeof control_dir + 2]; /* control_dir/m */

/* ---- host names ---- */

/* The bytes of a host name: what ssh's command line and scp's HOST:PATH
 * take as a name and nothing else (no option, no shell word, no port). */
static bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

mb_status mb__exec_ssh_host_check(const char *host, mb_error *err) {
  /* The host as a message may show it: control bytes as \xNN. */
  char shown[160];
  size_t used = 0;
  for (const char *p = host; *p && used + 5 < sizeof shown; p++)
    used += (size_t)snprintf(
        shown + used, sizeof shown - used,
        (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f ? "\\x%02x"
                                                              : "%c",
        (unsigned char)*p);
  const char *at = strchr(host, '@');
  const char *name = at ? at + 1 : host;
  size_t len = strlen(host);
  if (host[0] == '-' || name[0] == '-')
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "ssh host '%s' starts with '-': ssh would read it as an "
                     "option",
                     shown);
  if (len > 255)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "ssh host '%.60s...' is longer than 255 bytes", shown);
  if (strpbrk(host, ":[]"))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "ssh host '%s': a port or an IPv6 address does not go "
                     "in the host; name the host in --ssh-config (Host NAME, "
                     "HostName, Port) and give NAME",
                     shown);
  if ((at && (at == host || strchr(at + 1, '@'))) || !name[0])
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "ssh host '%s': expected HOST or USER@HOST", shown);
  for (const char *p = host; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (p == at || host_char(*p))
      continue;
    char what[32];
    if (c == ' ')
      snprintf(what, sizeof what, "a space");
    else if (c < 0x20 || c >= 0x7f)
      snprintf(what, sizeof what, "byte 0x%02x", c);
    else
      snprintf(what, sizeof what, "'%c'", c);
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "ssh host '%s': %s is not allowed in a host name "
                     "(letters, digits, '.', '-', '_', and USER@ before it; "
                     "aliases go in --ssh-config)",
                     shown, what);
  }
  return MB_STATUS_OK;
}

/* ---- argv building ---- */

typedef struct argv_list {
  char **v;
  int n, cap;
  bool oom;
} argv_list;

static void push(argv_list *a, const char *s) {
  if (a->oom)
    return;
  if (a->n + 2 > a->cap) {
    int cap = a->cap ? a->cap * 2 : 16;
    char **grown = realloc(a->v, sizeof *grown * (size_t)cap);
    if (!grown) {
      a->oom = true;
      return;
    }
    a->v = grown;
    a->cap = cap;
  }
  if (!(a->v[a->n] = mb__strdup(s))) {
    a->oom = true;
    return;
  }
  a->v[++a->n] = NULL;
}

static void argv_free(argv_list *a) {
  for (int i = 0; i < a->n; i++)
    free(a->v[i]);
  free(a->v);
  memset(a, 0, sizeof *a);
}

/* "ssh"/"scp" with the options every call shares. */
static void start_command(argv_list *a, const mb_exec_run *run,
                          const char *tool) {
  push(a, tool);
  if (run->ssh_config) {
    push(a, "-F");
    push(a, run->ssh_config);
  }
  push(a, "-o");
  push(a, "BatchMode=yes");
  push(a, "-o");
  push(a, "ConnectTimeout=" SSH_CONNECT_TIMEOUT_S);
  push(a, "-o");
  push(a, "ServerAliveInterval=5");
  push(a, "-o");
  push(a, "ServerAliveCountMax=3");
  if (control_path[0]) {
    char opt[160];
    snprintf(opt, sizeof opt, "ControlPath=%s", control_path);
    push(a, "-o");
    push(a, "ControlMaster=no");
    push(a, "-o");
    push(a, opt);
  }
  if (strcmp(tool, "scp") == 0) {
    push(a, "-q");
    push(a, "-r");
    push(a, "--"); /* the paths that follow are never options */
  }
}

/* A remote command line: the words quoted for the remote shell. */
typedef struct line {
  char *s;
  size_t len, cap;
  bool oom;
} line;

static void word(line *l, const char *w) {
  if (l->oom)
    return;
  if (l->len) {
    if (l->len + 2 > l->cap) {
      char *grown = realloc(l->s, l->cap * 2);
      if (!grown) {
        l->oom = true;
        return;
      }
      l->s = grown;
      l->cap *= 2;
    }
    l->s[l->len++] = ' ';
    l->s[l->len] = '\0';
  }
  if (!mb__exec_shell_quote(&l->s, &l->len, &l->cap, w))
    l->oom = true;
}

/* Appends a word of our own as it is: shell syntax such as "&&". */
static void raw(line *l, const char *w) {
  size_t n = strlen(w);
  if (l->oom)
    return;
  if (l->len + n + 2 > l->cap) {
    size_t cap = MB_MAX(l->cap * 2, l->len + n + 64);
    char *grown = realloc(l->s, cap);
    if (!grown) {
      l->oom = true;
      return;
    }
    l->s = grown;
    l->cap = cap;
  }
  if (l->len)
    l->s[l->len++] = ' ';
  memcpy(l->s + l->len, w, n + 1);
  l->len += n;
}

static const char *remote_modelbench(const mb_exec_run *run) {
  return run->remote_modelbench ? run->remote_modelbench : "modelbench";
}

/* The remote modelbench's words (split at spaces, each quoted): one
 * executable, or a command such as "python3 -m modelbench" or
 * "env PYTHONPATH=/opt/mb python3 -m modelbench". */
static void command_words(line *l, const char *command) {
  char w[PATH_MAX];
  for (const char *p = command; *p;) {
    p += strspn(p, " ");
    size_t n = strcspn(p, " ");
    if (!n)
      break;
    if (n >= sizeof w) {
      l->oom = true; /* a word past PATH_MAX: nothing sensible to run */
      return;
    }
    memcpy(w, p, n);
    w[n] = '\0';
    word(l, w);
    p += n;
  }
}

/* Runs ssh HOST REMOTE-LINE; output in *out. */
static mb_status ssh_run(const mb_exec_run *run, const char *host,
                         const line *remote, double timeout_s, int *code,
                         char **out, mb_error *err) {
  argv_list a = {0};
  start_command(&a, run, "ssh");
  push(&a, host);
  push(&a, "--");
  push(&a, remote->s);
  mb_status status =
      a.oom || remote->oom
          ? mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory")
          : mb__exec_capture(a.v, timeout_s, code, out, err);
  argv_free(&a);
  return status;
}

/* ---- check ---- */

static mb_status ssh_check(mb_exec_run *run, mb_error *err) {
  for (int h = 0; h < run->n_hosts; h++) {
    const char *host = run->hosts[h];
    line remote = {0};
    command_words(&remote, remote_modelbench(run));
    word(&remote, "--version");
    char *out = NULL, last[256];
    int code = -1;
    mb_status status = ssh_run(run, host, &remote, 60, &code, &out, err);
    free(remote.s);
    if (status == MB_STATUS_NOT_FOUND) {
      free(out);
      return mb__error(err, status,
                       "ssh: cannot run ssh: not found (install Debian's "
                       "openssh-client)");
    }
    mb__exec_last_line(out, last, sizeof last);
    free(out);
    if (status)
      return mb__error(err, MB_STATUS_UNAVAILABLE, "ssh: host '%s': %s", host,
                       err->message);
    if (code == 255)
      return mb__error(err, MB_STATUS_UNAVAILABLE,
                       "ssh: cannot reach host '%s' (ssh exit 255: %s)", host,
                       last[0] ? last : "no message");
    char expected[64];
    snprintf(expected, sizeof expected, "modelbench %s", MB_VERSION_STRING);
    if (code != 0)
      return mb__error(err, MB_STATUS_UNAVAILABLE,
                       "ssh: host '%s' has no usable modelbench (tried '%s "
                       "--version': exit %d: %s); install modelbench %s there "
                       "or name it with --remote-modelbench",
                       host, remote_modelbench(run), code,
                       last[0] ? last : "no output", MB_VERSION_STRING);
    if (strcmp(last, expected) != 0)
      return mb__error(err, MB_STATUS_UNAVAILABLE,
                       "ssh: host '%s' runs '%s', this is %s: results of "
                       "different versions do not compare; install the same "
                       "version there",
                       host, last, expected);
  }
  return MB_STATUS_OK;
}

/* ---- the per-host worker ---- */

/* Writes text into tasks/N/NAME. */
static void write_outcome(const mb_exec_run *run, int task, const char *name,
                          const char *text) {
  char path[PATH_MAX];
  mb_error ignored;
  mb__exec_task_file(run, task, name, path, sizeof path);
  mb__write_file(path, text, strlen(text), &ignored);
}

/* Appends a command and its output to the task's ssh.log. The command
 * is quoted word for word (mb__exec_argv_quoted): pasted into a shell, it
 * runs the same ssh or scp and nothing else, whatever a path holds. */
static void log_output(const mb_exec_run *run, int task, char *const *argv,
                       const char *out) {
  char path[PATH_MAX];
  char *command = mb__exec_argv_quoted(argv);
  FILE *f =
      fopen(mb__exec_task_file(run, task, "ssh.log", path, sizeof path), "a");
  if (!f || !command) {
    if (f)
      fclose(f);
    free(command);
    return;
  }
  fprintf(f, "$ %s\n%s", command, out ? out : "");
  free(command);
  if (out && out[0] && out[strlen(out) - 1] != '\n')
    fputc('\n', f);
  fclose(f);
}

/* scp SOURCES... DEST (one of them remote); fails with a message. */
static bool copy(const mb_exec_run *run, int task, const char *const *sources,
                 int n, const char *dest, char *why, size_t why_size) {
  argv_list a = {0};
  start_command(&a, run, "scp");
  for (int i = 0; i < n; i++)
    push(&a, sources[i]);
  push(&a, dest);
  char *out = NULL;
  int code = -1;
  mb_error err;
  bool ok = false;
  if (a.oom) {
    snprintf(why, why_size, "out of memory");
  } else if (mb__exec_capture(a.v, SSH_COMMAND_TIMEOUT_S, &code, &out, &err)) {
    snprintf(why, why_size, "%s", err.message);
  } else {
    log_output(run, task, a.v, out);
    char last[200];
    mb__exec_last_line(out, last, sizeof last);
    if (code != 0)
      snprintf(why, why_size, "scp to/from the host failed (exit %d: %s)", code,
               last[0] ? last : "no message");
    ok = code == 0;
  }
  free(out);
  argv_free(&a);
  return ok;
}

/* ssh HOST LINE for one step of a task; false with why on failure. */
static bool remote_step(const mb_exec_run *run, int task, const char *host,
                        const line *remote, int *code, char **out, char *why,
                        size_t why_size) {
  mb_error err;
  argv_list a = {0};
  start_command(&a, run, "ssh");
  push(&a, host);
  push(&a, "--");
  push(&a, remote->s ? remote->s : "true");
  *code = -1;
  *out = NULL;
  bool ok = false;
  if (a.oom || remote->oom)
    snprintf(why, why_size, "out of memory");
  else if (mb__exec_capture(a.v, SSH_COMMAND_TIMEOUT_S, code, out, &err))
    snprintf(why, why_size, "%s", err.message);
  else {
    log_output(run, task, a.v, *out);
    ok = *code != 255;
    if (!ok) {
      char last[200];
      mb__exec_last_line(*out, last, sizeof last);
      snprintf(why, why_size, "lost host '%s' (ssh exit 255: %s)", host,
               last[0] ? last : "no message");
    }
  }
  argv_free(&a);
  return ok;
}

/* The files of a model: itself and its external data (ONNX), or, for a
 * manifest (.json), its whole folder. */
static bool model_files(const char *model, char ***files, int *n) {
  *files = NULL;
  *n = 0;
  size_t len = strlen(model);
  if (len > 5 && strcmp(model + len - 5, ".onnx") == 0) {
    mb_model *m = NULL;
    mb_error err;
    if (mb_model_load(model, &m, &err) == MB_STATUS_OK &&
        m->n_external_files > 0) {
      *files = calloc((size_t)m->n_external_files, sizeof **files);
      for (int i = 0; *files && i < m->n_external_files; i++)
        if (((*files)[i] = mb__strdup(m->external_files[i])))
          (*n)++;
    }
    mb_model_free(m); /* a model that does not load fails on the host */
  }
  return true;
}

/* One task on one host, as the steps of run_task share it. */
typedef struct task_ctx {
  const mb_exec_run *run;
  int task;
  const char *host;
  const mb_exec_task *t;
  const char *base;           /* the model's file name */
  bool manifest;              /* the model is a manifest (.json) */
  char model_dir[PATH_MAX];   /* the model's folder here, with its '/' */
  char remote_dir[512];       /* the task's folder on the host, or "" */
  char remote_model_dir[700]; /* remote_dir/model */
  char why[512];              /* why the task failed */
} task_ctx;

/* Runs l on the task's host and frees it; its output goes to ssh.log. */
static bool remote_line(task_ctx *tc, line *l, int *code) {
  char *out = NULL;
  bool ok = remote_step(tc->run, tc->task, tc->host, l, code, &out, tc->why,
                        sizeof tc->why);
  free(l->s);
  free(out);
  return ok;
}

/* Makes the task's temporary folder on the host (tc->remote_dir). */
static bool make_task_dir(task_ctx *tc) {
  char *out = NULL;
  int code;
  line mk = {0};
  word(&mk, "mktemp");
  word(&mk, "-d");
  word(&mk, "/tmp/modelbench-task.XXXXXX");
  bool ok = remote_step(tc->run, tc->task, tc->host, &mk, &code, &out, tc->why,
                        sizeof tc->why);
  free(mk.s);
  if (ok) {
    mb__exec_last_line(out, tc->remote_dir, sizeof tc->remote_dir);
    /* The folder goes into scp's HOST:PATH as it is: only a name of
     * mktemp's own alphabet, nothing a shell or a glob would read. */
    size_t safe = strspn(tc->remote_dir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
                                         "KLMNOPQRSTUVWXYZ0123456789._-/");
    if (code != 0 || tc->remote_dir[0] != '/' || tc->remote_dir[safe] != '\0') {
      snprintf(tc->why, sizeof tc->why,
               "mktemp on host '%s' failed (exit %d: %.400s)", tc->host, code,
               tc->remote_dir);
      tc->remote_dir[0] = '\0'; /* nothing of ours to remove */
      ok = false;
    }
  }
  free(out);
  return ok;
}

/* Makes the folders the task's files go to on the host: model/ and the
 * external data's subfolders, one argN/ per file option. */
static bool make_input_dirs(task_ctx *tc, char *const *ext, int n_ext) {
  const mb_exec_run *run = tc->run;
  int code;
  line mkdirs = {0};
  word(&mkdirs, "mkdir");
  word(&mkdirs, "-p");
  word(&mkdirs, tc->remote_model_dir);
  for (int i = 0; i < n_ext; i++)
    if (strchr(ext[i], '/')) {
      char sub[PATH_MAX];
      snprintf(sub, sizeof sub, "%s/%.*s", tc->remote_model_dir,
               (int)(strrchr(ext[i], '/') - ext[i]), ext[i]);
      word(&mkdirs, sub);
    }
  for (int i = 0; i < run->n_args; i++)
    if (run->args[i].path && run->args[i].value) {
      char sub[720];
      snprintf(sub, sizeof sub, "%s/arg%d", tc->remote_dir, i);
      word(&mkdirs, sub);
    }
  return remote_line(tc, &mkdirs, &code);
}

/* Copies the model (a manifest: its folder), its external data and every
 * file option into the folders make_input_dirs made.
 *
 * The remote path of every HOST:PATH is one of ours, made of the task's
 * folder (mktemp's name, checked) and fixed words: a remote shell (scp's
 * legacy protocol) and scp's remote globbing would take a name from the
 * model as words and patterns, while quoting it would break scp's SFTP
 * protocol, which takes the path as it is. A file keeps its own name by
 * going into a folder (scp names it in the protocol, never a shell); an
 * external data file, whose name has the model's subfolders, goes to
 * extN and is moved into place by a quoted `mv` (place_external_files). */
static bool copy_input_files(task_ctx *tc, char *const *ext, int n_ext) {
  const mb_exec_run *run = tc->run;
  char dest[1024], path[PATH_MAX];
  /* A manifest's folder without its trailing '/', so that scp -r copies
   * the folder itself. */
  char folder[PATH_MAX];
  snprintf(folder, sizeof folder, "%.*s", (int)strlen(tc->model_dir) - 1,
           tc->model_dir);
  const char *model_src[1] = {tc->manifest ? folder : tc->t->model};
  snprintf(dest, sizeof dest, "%s:%s/", tc->host, tc->remote_model_dir);
  bool ok = copy(run, tc->task, model_src, 1, dest, tc->why, sizeof tc->why);
  for (int i = 0; ok && i < n_ext; i++) {
    const char *src[1] = {path};
    snprintf(path, sizeof path, "%s%s", tc->model_dir, ext[i]);
    snprintf(dest, sizeof dest, "%s:%s/ext%d", tc->host, tc->remote_dir, i);
    ok = copy(run, tc->task, src, 1, dest, tc->why, sizeof tc->why);
  }
  for (int i = 0; ok && i < run->n_args; i++)
    if (run->args[i].path && run->args[i].value) {
      const char *src[1] = {run->args[i].value};
      snprintf(dest, sizeof dest, "%s:%s/arg%d/", tc->host, tc->remote_dir, i);
      ok = copy(run, tc->task, src, 1, dest, tc->why, sizeof tc->why);
    }
  return ok;
}

/* Moves each external data file from extN to its place under model/, in
 * one remote line of quoted words: mv -- extN model/NAME && ... */
static bool place_external_files(task_ctx *tc, char *const *ext, int n_ext) {
  if (n_ext == 0)
    return true;
  line mv = {0};
  for (int i = 0; i < n_ext; i++) {
    char from[600], to[PATH_MAX + 700];
    snprintf(from, sizeof from, "%s/ext%d", tc->remote_dir, i);
    snprintf(to, sizeof to, "%s/%s", tc->remote_model_dir, ext[i]);
    if (i)
      raw(&mv, "&&");
    word(&mv, "mv");
    word(&mv, "--");
    word(&mv, from);
    word(&mv, to);
  }
  int code;
  bool ok = remote_line(tc, &mv, &code);
  if (ok && code != 0) {
    snprintf(tc->why, sizeof tc->why,
             "moving the external data files into place on host '%s' failed "
             "(exit %d; see tasks/%d/ssh.log)",
             tc->host, code, tc->task);
    ok = false;
  }
  return ok;
}

/* Brings the model, its external data and the file options to the host,
 * laid out as on this machine relative to the model's folder. */
static bool copy_inputs(task_ctx *tc) {
  char **ext = NULL;
  int n_ext = 0;
  snprintf(tc->remote_model_dir, sizeof tc->remote_model_dir, "%s/model",
           tc->remote_dir);
  model_files(tc->t->model, &ext, &n_ext);
  bool ok = make_input_dirs(tc, ext, n_ext) &&
            copy_input_files(tc, ext, n_ext) &&
            place_external_files(tc, ext, n_ext);
  for (int i = 0; i < n_ext; i++)
    free(ext[i]);
  free(ext);
  return ok;
}

/* The remote `modelbench bench` command line of the task, into l. */
static void bench_line(const task_ctx *tc, line *l) {
  const mb_exec_run *run = tc->run;
  char buf[PATH_MAX + 64];
  command_words(l, remote_modelbench(run));
  word(l, "bench");
  if (tc->manifest) {
    /* The manifest's folder was copied whole: model/<folder>/<file>. */
    int end = (int)strlen(tc->model_dir) - 1, start = end;
    while (start > 0 && tc->model_dir[start - 1] != '/')
      start--;
    snprintf(buf, sizeof buf, "%s/%.*s/%s", tc->remote_model_dir, end - start,
             tc->model_dir + start, tc->base);
  } else {
    snprintf(buf, sizeof buf, "%s/%s", tc->remote_model_dir, tc->base);
  }
  word(l, buf);
  if (tc->t->split) {
    snprintf(buf, sizeof buf, "--conversions=%s", tc->t->conversions);
    word(l, buf);
  }
  for (int i = 0; i < run->n_args; i++) {
    const mb_exec_arg *a = &run->args[i];
    const char *value = a->value;
    char remote_value[PATH_MAX];
    if (a->path && value) {
      const char *b = strrchr(value, '/') ? strrchr(value, '/') + 1 : value;
      snprintf(remote_value, sizeof remote_value, "%s/arg%d/%s", tc->remote_dir,
               i, b);
      value = remote_value;
    }
    snprintf(buf, sizeof buf, "--%s%s%s", a->name, value ? "=" : "",
             value ? value : "");
    word(l, buf);
  }
  snprintf(buf, sizeof buf, "--json=%s/report.json", tc->remote_dir);
  word(l, buf);
  snprintf(buf, sizeof buf, "--log-dir=%s/logs", tc->remote_dir);
  word(l, buf);
  word(l, "--no-record");
}

/* Runs the benchmark on the host; *code: bench's exit code. Exit codes
 * above 1 (not "some conversions failed") fail the task. */
static bool run_remote_bench(task_ctx *tc, int *code) {
  line bench = {0};
  bench_line(tc, &bench);
  if (!remote_line(tc, &bench, code))
    return false;
  if (*code > 1) {
    snprintf(tc->why, sizeof tc->why,
             "the remote modelbench on '%s' failed (exit %d; see "
             "tasks/%d/ssh.log)",
             tc->host, *code, tc->task);
    return false;
  }
  return true;
}

/* Brings report.json back into the task folder, when there is one. */
static bool fetch_report(task_ctx *tc) {
  char src_buf[1024], path[PATH_MAX];
  const char *src[1] = {src_buf};
  snprintf(src_buf, sizeof src_buf, "%s:%s/report.json", tc->host,
           tc->remote_dir);
  mb__exec_task_file(tc->run, tc->task, "report.json", path, sizeof path);
  /* A model that failed to load left no report: bench's exit code and
   * its output in ssh.log say why. */
  line test = {0};
  char report[600];
  snprintf(report, sizeof report, "%s/report.json", tc->remote_dir);
  word(&test, "test");
  word(&test, "-f");
  word(&test, report);
  int exists = -1;
  if (remote_line(tc, &test, &exists) && exists == 0)
    return copy(tc->run, tc->task, src, 1, path, tc->why, sizeof tc->why);
  return exists == 1;
}

/* Removes the task's folder on the host; a failure is only logged. */
static void remove_task_dir(const task_ctx *tc) {
  line rm = {0};
  char *out = NULL, ignored[128];
  int rm_code;
  word(&rm, "rm");
  word(&rm, "-rf");
  word(&rm, tc->remote_dir);
  remote_step(tc->run, tc->task, tc->host, &rm, &rm_code, &out, ignored,
              sizeof ignored);
  free(rm.s);
  free(out);
}

/* Runs one task on host; leaves its outcome in the task folder. */
static void run_task(const mb_exec_run *run, int task, const char *host) {
  task_ctx tc = {.run = run, .task = task, .host = host};
  const mb_exec_task *t = tc.t = &run->tasks[task];
  int code = -1;
  write_outcome(run, task, "running", host);
  tc.base = strrchr(t->model, '/') ? strrchr(t->model, '/') + 1 : t->model;
  size_t mlen = strlen(t->model);
  tc.manifest = mlen > 5 && strcmp(t->model + mlen - 5, ".json") == 0;
  snprintf(tc.model_dir, sizeof tc.model_dir, "%.*s", (int)(tc.base - t->model),
           t->model);
  bool ok = make_task_dir(&tc) && copy_inputs(&tc) &&
            run_remote_bench(&tc, &code) && fetch_report(&tc);
  if (tc.remote_dir[0] == '/')
    remove_task_dir(&tc);
  if (ok) {
    char text[16];
    snprintf(text, sizeof text, "%d\n", code);
    write_outcome(run, task, "exit", text);
  } else {
    write_outcome(run, task, "failed", tc.why);
  }
}

/* Starts the worker's master connection to host (ssh -M -N, its output
 * in the run folder's ssh-master-HOST.log) and waits until it answers
 * (ssh -O check, at most the connect timeout). Without it every command
 * connects on its own. Returns its pid, or -1. */
static pid_t start_master(const mb_exec_run *run, int host_index) {
  const char *host = run->hosts[host_index];
  char path[sizeof control_path], log[PATH_MAX], opt[160];
  argv_list a = {0};
  pid_t pid = -1;
  /* $TMPDIR when the socket's path fits sun_path there, else /tmp. */
  const char *tmp = getenv("TMPDIR");
  if (!tmp || tmp[0] != '/' ||
      strlen(tmp) + sizeof "/modelbench-ssh-XXXXXX/m" + 17 > 108)
    tmp = "/tmp";
  snprintf(control_dir, sizeof control_dir, "%s/modelbench-ssh-XXXXXX", tmp);
  if (!mkdtemp(control_dir)) {
    control_dir[0] = '\0';
    return -1; /* every command connects on its own */
  }
  snprintf(path, sizeof path, "%s/m", control_dir);
  snprintf(log, sizeof log, "%s/ssh-master-%d.log", run->dir, host_index);
  start_command(&a, run, "ssh");
  snprintf(opt, sizeof opt, "ControlPath=%s", path);
  push(&a, "-o");
  push(&a, "ControlMaster=yes");
  push(&a, "-o");
  push(&a, opt);
  push(&a, "-N");
  push(&a, host);
  if (a.oom) {
    argv_free(&a);
    goto fail;
  }
  pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    dup2(null, STDIN_FILENO);
    dup2(out >= 0 ? out : null, STDOUT_FILENO);
    dup2(out >= 0 ? out : null, STDERR_FILENO);
    execvp(a.v[0], a.v);
    _exit(127);
  }
  argv_free(&a);
  if (pid < 0)
    goto fail;
  /* ssh -O check until the master answers, or it gave up. */
  for (int tries = 0; tries < 10 * atoi(SSH_CONNECT_TIMEOUT_S); tries++) {
    argv_list c = {0};
    start_command(&c, run, "ssh");
    push(&c, "-o");
    push(&c, opt);
    push(&c, "-O");
    push(&c, "check");
    push(&c, host);
    int code = -1;
    mb_error err;
    bool up = !c.oom &&
              mb__exec_capture(c.v, 10, &code, NULL, &err) == MB_STATUS_OK &&
              code == 0;
    argv_free(&c);
    if (up) {
      snprintf(control_path, sizeof control_path, "%s", path);
      return pid;
    }
    if (waitpid(pid, NULL, WNOHANG) == pid)
      goto fail; /* the master could not connect: commands will say why */
    usleep(100000);
  }
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
fail:
  unlink(path);
  rmdir(control_dir);
  control_dir[0] = '\0';
  return -1;
}

static void stop_master(pid_t pid) {
  if (pid <= 0)
    return;
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  unlink(control_path);
  rmdir(control_dir);
  control_path[0] = control_dir[0] = '\0';
}

/* ---- submit and poll ---- */

static mb_status ssh_submit(mb_exec_run *run, const int *tasks, int n,
                            mb_error *err) {
  char path[PATH_MAX];
  /* Round-robin over the hosts; a retry goes to the host after the one
   * it failed on. */
  int *host_of = calloc((size_t)n + 1, sizeof *host_of);
  if (!host_of)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int k = 0; k < n; k++) {
    mb_exec_task *t = &run->tasks[tasks[k]];
    int h = tasks[k] % run->n_hosts;
    for (int i = 0; t->attempts > 0 && i < run->n_hosts; i++)
      if (strcmp(run->hosts[i], t->where) == 0)
        h = (i + 1) % run->n_hosts;
    host_of[k] = h;
    snprintf(t->where, sizeof t->where, "%s", run->hosts[h]);
    t->state = MB_TASK_PENDING;
    t->attempts++;
    t->node[0] = t->slurm_state[0] = t->reason[0] = '\0';
    static const char *const stale[] = {"exit", "failed", "running",
                                        "report.json"};
    for (size_t s = 0; s < MB_ARRAY_COUNT(stale); s++)
      unlink(mb__exec_task_file(run, tasks[k], stale[s], path, sizeof path));
  }
  fflush(stdout);
  fflush(stderr);
  mb_status status = MB_STATUS_OK;
  for (int h = 0; h < run->n_hosts && !status; h++) {
    int count = 0;
    for (int k = 0; k < n; k++)
      count += host_of[k] == h;
    if (count == 0)
      continue;
    host_worker *grown =
        realloc(workers, sizeof *grown * (size_t)(n_workers + 1));
    int *mine = calloc((size_t)count, sizeof *mine);
    if (!grown || !mine) {
      if (grown)
        workers = grown;
      free(mine);
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "out of memory");
      break;
    }
    workers = grown;
    count = 0;
    for (int k = 0; k < n; k++)
      if (host_of[k] == h)
        mine[count++] = tasks[k];
    pid_t pid = fork();
    if (pid < 0) {
      free(mine);
      status = mb__error(err, MB_STATUS_IO, "ssh: fork: %s", strerror(errno));
      break;
    }
    if (pid == 0) {
      pid_t master = start_master(run, h);
      for (int k = 0; k < count; k++)
        run_task(run, mine[k], run->hosts[h]);
      stop_master(master);
      _exit(0);
    }
    workers[n_workers++] = (host_worker){pid, mine, count};
  }
  free(host_of);
  return status;
}

static bool file_text(const mb_exec_run *run, int task, const char *name,
                      char *buf, size_t size) {
  char path[PATH_MAX];
  FILE *f = fopen(mb__exec_task_file(run, task, name, path, sizeof path), "r");
  if (!f)
    return false;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  fclose(f);
  return true;
}

static mb_status ssh_poll(mb_exec_run *run, mb_error *err) {
  (void)err;
  /* Reap workers that ended, so that a worker that died early is seen. */
  for (int w = 0; w < n_workers; w++)
    if (workers[w].pid > 0 && waitpid(workers[w].pid, NULL, WNOHANG) > 0)
      workers[w].pid = 0;
  for (int i = 0; i < run->n_tasks; i++) {
    mb_exec_task *t = &run->tasks[i];
    if (t->state != MB_TASK_PENDING && t->state != MB_TASK_RUNNING)
      continue;
    char text[sizeof t->reason];
    if (file_text(run, i, "exit", text, sizeof text)) {
      t->state = MB_TASK_DONE;
      snprintf(t->node, sizeof t->node, "%s", t->where);
      continue;
    }
    if (file_text(run, i, "failed", text, sizeof text)) {
      t->state = MB_TASK_FAILED;
      snprintf(t->reason, sizeof t->reason, "%s", text);
      continue;
    }
    bool alive = false, mine = false;
    for (int w = 0; w < n_workers; w++)
      for (int k = 0; k < workers[w].n_tasks; k++)
        if (workers[w].tasks[k] == i) {
          mine = true;
          alive |= workers[w].pid > 0;
        }
    if (file_text(run, i, "running", text, sizeof text))
      t->state = MB_TASK_RUNNING;
    if (!alive) {
      t->state = MB_TASK_FAILED;
      snprintf(t->reason, sizeof t->reason, "%s",
               mine ? "its ssh worker process ended before the task did"
                    : "no ssh worker runs it (the submitting modelbench "
                      "is gone)");
    }
  }
  return MB_STATUS_OK;
}

const mb_executor mb__executor_ssh = {
    .name = "ssh",
    .check = ssh_check,
    .submit = ssh_submit,
    .poll = ssh_poll,
    .detached = false,
};
