/* What besides the machine changes how fast a run goes, captured by the
 * parent when a run starts: the hash of every CPU flag (a microcode or
 * hypervisor change hides flags), the frequency governor, SMT, the kernel,
 * the CPUs the run may use, OpenBLAS's build and the environment variables
 * runtimes read. `compare` diffs two runs' environments (db/environment.c)
 * so that "2x slower" comes with "OMP_WAIT_POLICY: (unset) -> passive".
 *
 * Workers are forked from the parent and inherit its environment, so the
 * parent's is theirs. Nothing here fails a run: an unreadable fact says
 * why. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "bench/bench_internal.h"
#include "ops/op.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

extern char **environ;

/* The variables that change speed: thread pools and their waiting
 * (OpenMP, MKL, oneDNN, OpenBLAS), allocators, preloaded libraries, the
 * runtimes' own switches and the devices a run sees. Values are kept
 * verbatim. */
static const struct {
  const char *name;
  bool prefix; /* name is a prefix ("OMP_") rather than a whole name */
} speed_variables[] = {
    {"OMP_", true},        {"GOMP_", true},
    {"KMP_", true},        {"MKL_", true},
    {"ONEDNN_", true},     {"DNNL_", true},
    {"OPENBLAS_", true},   {"GOTO_NUM_THREADS", false},
    {"MALLOC_", true},     {"GLIBC_TUNABLES", false},
    {"LD_PRELOAD", false}, {"TORCH", true}, /* TORCH_, TORCHINDUCTOR_ */
    {"PYTORCH_", true},    {"ORT_", true},
    {"OV_", true},         {"OPENVINO_", true},
    {"TBB_", true},        {"CUDA_VISIBLE_DEVICES", false},
};

bool mb__environment_variable_matters(const char *name, size_t len) {
  for (size_t i = 0; i < MB_ARRAY_COUNT(speed_variables); i++) {
    size_t n = strlen(speed_variables[i].name);
    if (speed_variables[i].prefix ? len >= n : len == n)
      if (strncmp(name, speed_variables[i].name, n) == 0)
        return true;
  }
  return false;
}

/* Orders "NAME=value" strings by NAME. */
static int by_name(const void *pa, const void *pb) {
  const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
  size_t la = strcspn(a, "="), lb = strcspn(b, "=");
  int c = strncmp(a, b, la < lb ? la : lb);
  return c ? c : (la > lb) - (la < lb);
}

static mb_status capture_variables(mb_environment *env, mb_arena *arena,
                                   mb_error *err) {
  int n = 0;
  for (char **e = environ; e && *e; e++)
    n += mb__environment_variable_matters(*e, strcspn(*e, "="));
  env->n_variables = 0;
  env->variables = NULL;
  if (n == 0)
    return MB_STATUS_OK;
  const char **vars = mb__arena_alloc(arena, sizeof *vars * (size_t)n);
  if (!vars)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "environment: out of memory");
  int k = 0;
  for (char **e = environ; e && *e && k < n; e++)
    if (mb__environment_variable_matters(*e, strcspn(*e, "=")) &&
        !(vars[k++] = mb__arena_strdup(arena, *e)))
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "environment: out of memory");
  qsort(vars, (size_t)k, sizeof *vars, by_name);
  env->variables = vars;
  env->n_variables = k;
  return MB_STATUS_OK;
}

/* The first line of a sysfs file into buf; errno's value when it cannot
 * be read (0 on success). */
static int read_line(const char *path, char *buf, size_t size) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f)
    return errno ? errno : EIO;
  int e = fgets(buf, (int)size, f) ? 0 : EIO;
  fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
  return e;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void capture_governor(mb_environment *env) {
  static const char path[] =
      "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
  char value[64];
  int e = read_line(path, value, sizeof value);
  if (e == 0 && value[0])
    snprintf(env->governor, sizeof env->governor, "%s", value);
  else if (!exists("/sys/devices/system/cpu/cpu0/cpufreq"))
    snprintf(env->governor, sizeof env->governor,
             "unknown: no cpufreq in /sys (no frequency driver, as in most "
             "VMs)");
  else
    snprintf(env->governor, sizeof env->governor, "unknown: %s: %s", path,
             strerror(e ? e : EIO));
}

static void capture_smt(mb_environment *env) {
  char active[16], control[32];
  int e =
      read_line("/sys/devices/system/cpu/smt/active", active, sizeof active);
  int ec =
      read_line("/sys/devices/system/cpu/smt/control", control, sizeof control);
  /* control says why SMT is off: "off", "forceoff", "notsupported". */
  bool plain =
      ec != 0 || strcmp(control, "on") == 0 || strcmp(control, "off") == 0;
  if (e == 0 && (strcmp(active, "1") == 0 || strcmp(active, "0") == 0))
    snprintf(
        env->smt, sizeof env->smt, "%s%s%s%s", active[0] == '1' ? "on" : "off",
        plain ? "" : " (control: ", plain ? "" : control, plain ? "" : ")");
  else
    snprintf(env->smt, sizeof env->smt,
             "unknown: /sys/devices/system/cpu/smt/active: %s",
             strerror(e ? e : EINVAL));
}

/* sha256 of the value of /proc/cpuinfo's first "flags" (x86) or
 * "Features" (arm64) line: every flag, not only those machine.isa_flags
 * names, so a hidden or added one shows. */
void mb__cpu_flags_sha256(char out[17]) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char *line = NULL;
  size_t cap = 0;
  out[0] = '\0';
  while (f && getline(&line, &cap, f) > 0) {
    size_t key = strcspn(line, " \t:");
    if (!((key == 5 && strncmp(line, "flags", 5) == 0) ||
          (key == 8 && strncmp(line, "Features", 8) == 0)))
      continue;
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    char *value = colon + 1 + strspn(colon + 1, " \t");
    value[strcspn(value, "\n")] = '\0';
    mb_sha256 sha;
    uint8_t digest[32];
    char hex[65];
    mb__sha256_init(&sha);
    mb__sha256_update(&sha, value, strlen(value));
    mb__sha256_final(&sha, digest);
    mb__sha256_hex(digest, hex);
    snprintf(out, 17, "%.16s", hex);
    break;
  }
  free(line);
  if (f)
    fclose(f);
}

int mb__cpus_allowed(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (int)online : 1;
}

mb_status mb__environment_capture(mb_environment *env, mb_arena *arena,
                                  mb_error *err) {
  memset(env, 0, sizeof *env);
  env->recorded = 1;
  mb__cpu_flags_sha256(env->cpu_flags_sha256);
  capture_governor(env);
  capture_smt(env);
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(env->kernel, sizeof env->kernel, "%s %s", u.release, u.version);
  env->cpus_allowed = mb__cpus_allowed();
  snprintf(env->blas, sizeof env->blas, "%s", mb__blas_build());
  return capture_variables(env, arena, err);
}
