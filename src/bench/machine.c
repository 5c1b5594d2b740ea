/* What machine the figures come from: CPU model, cores, the ISA extensions
 * runtimes dispatch on, OS, frequency governor and load. Everything is read
 * from /proc and /sys; a field that cannot be read stays empty rather than
 * failing the run. Also the clocks and memory figures workers report. */
#include "bench/bench_internal.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* The /proc/cpuinfo flags that decide which kernels runtimes pick, in the
 * order they are reported. */
static const char *const isa_flags_of_interest[] = {
    "sse4_1",      "sse4_2",      "avx",      "avx2",     "fma",
    "f16c",        "avx512f",     "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16",
    "amx_int8",    "asimd",       "asimdhp",  "asimddp",  "sve",
};

/* Copies the value of the first "key\t: value" line of /proc/cpuinfo. */
static int cpuinfo_value(const char *key, char *buf, size_t size) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return 0;
  char *line = NULL;
  size_t cap = 0;
  int found = 0;
  size_t key_len = strlen(key);
  while (!found && getline(&line, &cap, f) > 0) {
    if (strncmp(line, key, key_len) != 0)
      continue;
    char *colon = line + key_len + strspn(line + key_len, " \t");
    if (*colon != ':')
      continue;
    char *value = colon + 1 + strspn(colon + 1, " \t");
    value[strcspn(value, "\n")] = '\0';
    snprintf(buf, size, "%s", value);
    found = 1;
  }
  free(line);
  fclose(f);
  return found;
}

static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

static void read_first_line(const char *path, char *buf, size_t size) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  if (fgets(buf, (int)size, f))
    buf[strcspn(buf, "\n")] = '\0';
  else
    buf[0] = '\0';
  fclose(f);
}

void mb__machine_info(mb_machine_info *info) {
  memset(info, 0, sizeof *info);
  if (!cpuinfo_value("model name", info->cpu_model, sizeof info->cpu_model))
    cpuinfo_value("Model", info->cpu_model, sizeof info->cpu_model);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  info->cores = cores > 0 ? (int)cores : 0;

  /* x86 calls them "flags", arm64 "Features"; 4 KiB holds either line. */
  char flags[4096];
  if (cpuinfo_value("flags", flags, sizeof flags) ||
      cpuinfo_value("Features", flags, sizeof flags)) {
    size_t used = 0;
    for (size_t i = 0; i < MB_ARRAY_COUNT(isa_flags_of_interest); i++) {
      if (!has_word(flags, isa_flags_of_interest[i]))
        continue;
      int w = snprintf(info->isa_flags + used, sizeof info->isa_flags - used,
                       "%s%s", used ? " " : "", isa_flags_of_interest[i]);
      if (w < 0 || (size_t)w >= sizeof info->isa_flags - used)
        break;
      used += (size_t)w;
    }
  }

  struct utsname u;
  if (uname(&u) == 0)
    if (snprintf(info->os, sizeof info->os, "%s %s %s", u.sysname, u.release,
                 u.machine) < 0)
      info->os[0] = '\0';
  read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                  info->governor, sizeof info->governor);
  double load[1];
  info->load_average = getloadavg(load, 1) == 1 ? load[0] : -1.0;
  if (gethostname(info->host, sizeof info->host) != 0)
    info->host[0] = '\0';
  info->host[sizeof info->host - 1] = '\0';
}

/* VmHWM from /proc/self/status in kB, or -1. */
static long vm_hwm_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) {
      kb = strtol(line + 6, NULL, 10);
      break;
    }
  fclose(f);
  return kb;
}

double mb__peak_rss_mb(void) {
  long kb = vm_hwm_kb();
  if (kb < 0) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
      return 0.0;
    kb = ru.ru_maxrss; /* kilobytes on Linux */
  }
  return (double)kb / 1024.0;
}

int mb__peak_rss_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f)
    return 0;
  int ok = fputs("5", f) >= 0;
  if (fclose(f) != 0)
    ok = 0;
  return ok;
}

long long mb__minor_faults(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return -1;
  return (long long)ru.ru_minflt;
}

double mb__page_fault_us(void) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0)
    return 0.0;
  const size_t pages = 64, size = pages * (size_t)page;
  double best = 0.0;
  for (int round = 0; round < 3; round++) {
    double start = mb__now();
    volatile char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return 0.0;
    for (size_t i = 0; i < size; i += (size_t)page)
      p[i] = 1;
    munmap((void *)p, size);
    double us = (mb__now() - start) * 1e6 / (double)pages;
    if (round == 0 || us < best)
      best = us;
  }
  return best;
}

double mb__cpu_time(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    return 0.0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* /proc/stat's "cpu" line: user nice system idle iowait irq softirq
 * steal, in ticks; the count of fields read (0 when unreadable). */
static int proc_stat_cpu(unsigned long long v[8]) {
  FILE *f = fopen("/proc/stat", "r");
  int n = 0;
  memset(v, 0, 8 * sizeof *v);
  if (f) {
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
               &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
  }
  return n < 0 ? 0 : n;
}

/* CPU seconds every core spent busy since boot (user, nice, system, irq,
 * softirq and steal; guest time is already in user), or -1 when unknown. */
static double machine_busy_seconds(void) {
  unsigned long long v[8];
  int n = proc_stat_cpu(v);
  long hz = sysconf(_SC_CLK_TCK);
  if (n < 7 || hz <= 0)
    return -1.0;
  unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return (double)busy / (double)hz;
}

double mb__steal_seconds(void) {
  unsigned long long v[8];
  long hz = sysconf(_SC_CLK_TCK);
  if (proc_stat_cpu(v) < 8 || hz <= 0)
    return -1.0;
  return (double)v[7] / (double)hz;
}

void mb__cpu_window_start(mb_cpu_window *w) {
  w->wall = mb__now();
  w->own = mb__cpu_time();
  w->busy = machine_busy_seconds();
}

double mb__cpu_window_others(const mb_cpu_window *w) {
  double wall = mb__now() - w->wall;
  double busy = machine_busy_seconds();
  /* /proc/stat counts in ticks (10 ms at 100 Hz): a shorter window says
   * too little. */
  if (w->busy < 0.0 || busy < 0.0 || wall < MB_CPU_WINDOW_MIN_S)
    return -1.0;
  double others = (busy - w->busy - (mb__cpu_time() - w->own)) / wall;
  return others > 0.0 ? others : 0.0;
}
