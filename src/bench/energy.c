/* Energy and cost per inference.
 *
 * Energy comes from RAPL's package domains under /sys/class/powercap
 * ($MODELBENCH_POWERCAP_DIR replaces that folder, so tests can give a fake
 * tree): every top-level zone named "<vendor>-rapl:<N>" (intel-rapl:0,
 * intel-rapl:1 on a two-socket machine; the same names on AMD, whose
 * package counters the kernel's RAPL driver exposes too). Sub-zones
 * ("intel-rapl:0:0", core or uncore) are inside the package's figure and
 * the MMIO interface ("intel-rapl-mmio:0") repeats it, so neither is
 * added. A counter that passed max_energy_range_uj wrapped to 0 once: the
 * delta adds the range back. A window too long for one wrap to explain
 * cannot happen at these counters' rates (the range is ~262 kJ: minutes at
 * hundreds of watts) in one timed phase.
 *
 * Where the counters cannot be read the result says why, never a silent
 * 0: no powercap folder (a VM exposes none), no package zone, or
 * energy_uj readable only by root (since Linux 5.10, after CVE-2020-8694:
 * the counter leaked what a process computed).
 *
 * Cost is arithmetic: what the cores a conversion holds cost per second,
 * times the seconds one inference takes at its measured throughput. */
#include "bench/bench_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define POWERCAP_DIR "/sys/class/powercap"

static const char *powercap_dir(void) {
  const char *env = getenv("MODELBENCH_POWERCAP_DIR");
  return env && env[0] ? env : POWERCAP_DIR;
}

/* "<letters>-rapl:<digits>": a package zone. */
static bool package_zone(const char *name) {
  const char *colon = strstr(name, "-rapl:");
  if (!colon || colon == name)
    return false;
  for (const char *p = name; p < colon; p++)
    if (*p < 'a' || *p > 'z')
      return false;
  const char *digits = colon + strlen("-rapl:");
  if (!*digits)
    return false;
  for (const char *p = digits; *p; p++)
    if (*p < '0' || *p > '9')
      return false;
  return true;
}

/* Reads one unsigned decimal from dir/zone/file; 0 on success, else an
 * errno (EINVAL for a file that holds no number). */
static int read_counter(const char *dir, const char *zone, const char *file,
                        unsigned long long *out) {
  char path[1024], text[64];
  if (snprintf(path, sizeof path, "%s/%s/%s", dir, zone, file) >=
      (int)sizeof path)
    return ENAMETOOLONG;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  ssize_t n = read(fd, text, sizeof text - 1);
  int e = n < 0 ? errno : 0;
  close(fd);
  if (n < 0)
    return e;
  text[n] = '\0';
  char *end;
  errno = 0;
  *out = strtoull(text, &end, 10);
  if (end == text || errno)
    return EINVAL;
  return 0;
}

/* Why a counter could not be read, for people. */
static void counter_reason(int e, const char *dir, const char *zone,
                           const char *file, char *buf, size_t size) {
  if (e == EACCES || e == EPERM)
    snprintf(buf, size,
             "%s is readable only by root (since Linux 5.10, "
             "CVE-2020-8694)",
             file);
  else
    snprintf(buf, size, "cannot read %s/%s/%s: %s", dir, zone, file,
             strerror(e));
}

static int compare_names(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

void mb__energy_start(mb_energy_window *w) {
  const char *dir = powercap_dir();
  memset(w, 0, sizeof *w);
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT)
      snprintf(w->unavailable, sizeof w->unavailable,
               "no %s: this machine exposes no RAPL (a VM?)", dir);
    else
      snprintf(w->unavailable, sizeof w->unavailable, "cannot open %s: %s", dir,
               strerror(errno));
    return;
  }
  struct dirent *entry;
  while ((entry = readdir(d)) && w->n < MB_ENERGY_MAX_DOMAINS)
    if (package_zone(entry->d_name) &&
        strlen(entry->d_name) < sizeof w->domains[0].zone)
      snprintf(w->domains[w->n++].zone, sizeof w->domains[0].zone, "%s",
               entry->d_name);
  closedir(d);
  /* Readdir's order is the file system's: sort, so the names read alike. */
  qsort(w->domains, (size_t)w->n, sizeof w->domains[0], compare_names);
  if (w->n == 0) {
    snprintf(w->unavailable, sizeof w->unavailable,
             "%s has no RAPL package zone (intel-rapl:N): the powercap "
             "driver is not loaded or this CPU has none",
             dir);
    return;
  }
  for (int i = 0; i < w->n; i++) {
    int e = read_counter(dir, w->domains[i].zone, "max_energy_range_uj",
                         &w->domains[i].range_uj);
    if (!e)
      e = read_counter(dir, w->domains[i].zone, "energy_uj",
                       &w->domains[i].before_uj);
    if (e) {
      counter_reason(e, dir, w->domains[i].zone,
                     e == EACCES || e == EPERM ? "energy_uj"
                                               : "energy_uj or "
                                                 "max_energy_range_uj",
                     w->unavailable, sizeof w->unavailable);
      w->n = 0;
      return;
    }
  }
  w->ok = 1;
}

double mb__energy_delta_uj(unsigned long long before, unsigned long long after,
                           unsigned long long range) {
  if (after >= before)
    return (double)(after - before);
  /* Wrapped once past range to 0. */
  return (double)(range - before) + (double)after;
}

void mb__energy_stop(const mb_energy_window *w, int64_t inferences,
                     mb_energy *out) {
  const char *dir = powercap_dir();
  memset(out, 0, sizeof *out);
  if (!w->ok) {
    snprintf(out->unavailable, sizeof out->unavailable, "%s",
             w->unavailable[0] ? w->unavailable : "not measured");
    return;
  }
  double uj = 0.0;
  size_t used = 0;
  for (int i = 0; i < w->n; i++) {
    unsigned long long after;
    int e = read_counter(dir, w->domains[i].zone, "energy_uj", &after);
    if (e) {
      counter_reason(e, dir, w->domains[i].zone, "energy_uj", out->unavailable,
                     sizeof out->unavailable);
      return;
    }
    uj += mb__energy_delta_uj(w->domains[i].before_uj, after,
                              w->domains[i].range_uj);
    int n = snprintf(out->domains + used, sizeof out->domains - used, "%s%s",
                     i ? "," : "", w->domains[i].zone);
    if (n > 0 && (size_t)n < sizeof out->domains - used)
      used += (size_t)n;
  }
  if (inferences <= 0) {
    snprintf(out->unavailable, sizeof out->unavailable,
             "no inference in the timed phase");
    return;
  }
  out->available = 1;
  out->joules = uj * 1e-6;
  out->joules_per_inference = out->joules / (double)inferences;
}

double mb__cost_per_million(double price_per_core_hour, int cores,
                            double throughput_sps) {
  if (!(price_per_core_hour > 0.0) || cores < 1 || !(throughput_sps > 0.0))
    return -1.0;
  double seconds_per_inference = 1.0 / throughput_sps;
  return price_per_core_hour * (double)cores * seconds_per_inference / 3600.0 *
         1e6;
}
