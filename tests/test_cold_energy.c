/* Cold start and energy (src/bench/stats.c, src/bench/energy.c): the rule
 * for iterations to steady state on known latency series, the RAPL
 * reader over fake powercap trees ($MODELBENCH_POWERCAP_DIR: normal,
 * wrapped, unreadable, missing), and the cost arithmetic. */
#include "bench/bench_internal.h"
#include "test.h"
#include "test_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- iterations to steady state ---- */

TEST(steady_after_warming) {
  /* Falls from 10 ms to about 1 ms: steady from index 3 (1.05 is within
   * 10%), though the window starting at 1 already has a median of 1.05. */
  double series[] = {10, 6, 3, 1.05, 1, 0.98, 1.02, 1, 1, 1, 1};
  ASSERT_EQ(mb__steady_iterations(series, MB_ARRAY_COUNT(series), 1.0), 3);
  /* A slower steady state settles later: 3 is not within 10% of 1. */
  double later[] = {10, 6, 3, 2, 1.5, 1, 1, 1, 1, 1, 1};
  ASSERT_EQ(mb__steady_iterations(later, MB_ARRAY_COUNT(later), 1.0), 5);
  return 0;
}

TEST(steady_ignores_a_lone_outlier) {
  /* One slow iteration in the middle moves no window's median... */
  double middle[] = {1, 1, 1, 1, 1, 5, 1, 1, 1, 1};
  ASSERT_EQ(mb__steady_iterations(middle, MB_ARRAY_COUNT(middle), 1.0), 0);
  /* ...but a slow first one is the warming up the figure is about. */
  double first[] = {5, 1, 1, 1, 1, 1};
  ASSERT_EQ(mb__steady_iterations(first, MB_ARRAY_COUNT(first), 1.0), 1);
  /* Two slow in a row late in the series do move a window. */
  double late[] = {1, 1, 1, 1, 3, 3, 3, 1, 1, 1, 1, 1};
  ASSERT_EQ(mb__steady_iterations(late, MB_ARRAY_COUNT(late), 1.0), 7);
  return 0;
}

TEST(steady_never) {
  double alternating[] = {1, 2, 1, 2, 1, 2, 1, 2};
  ASSERT_EQ(
      mb__steady_iterations(alternating, MB_ARRAY_COUNT(alternating), 1.5), -1);
  double few[] = {1, 1, 1};
  ASSERT_EQ(mb__steady_iterations(few, MB_ARRAY_COUNT(few), 1.0), -1);
  double ok[] = {1, 1, 1, 1, 1};
  ASSERT_EQ(mb__steady_iterations(ok, MB_ARRAY_COUNT(ok), 0.0), -1);
  return 0;
}

/* ---- a fake powercap tree ---- */

static char tree[64];

static int make_tree(void) {
  snprintf(tree, sizeof tree, "/tmp/mb-powercap-XXXXXX");
  if (!mkdtemp(tree))
    return -1;
  chmod(tree, 0755);
  return setenv("MODELBENCH_POWERCAP_DIR", tree, 1);
}

static void drop_tree(void) {
  test_remove_tree(tree);
  unsetenv("MODELBENCH_POWERCAP_DIR");
}

/* zone/{name,energy_uj,max_energy_range_uj}; energy NULL: no energy_uj. */
static int make_zone(const char *zone, const char *energy, const char *range) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", tree, zone);
  if (mkdir(path, 0755) != 0)
    return -1;
  snprintf(path, sizeof path, "%s/%s/name", tree, zone);
  if (test_write_text(path, "package-0\n"))
    return -1;
  snprintf(path, sizeof path, "%s/%s/max_energy_range_uj", tree, zone);
  if (test_write_text(path, range))
    return -1;
  snprintf(path, sizeof path, "%s/%s/energy_uj", tree, zone);
  return energy ? test_write_text(path, energy) : 0;
}

static int set_energy(const char *zone, const char *energy) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s/energy_uj", tree, zone);
  return test_write_text(path, energy);
}

TEST(energy_sums_package_zones) {
  ASSERT_EQ(make_tree(), 0);
  ASSERT_EQ(make_zone("intel-rapl:0", "1000000\n", "262143328850\n"), 0);
  ASSERT_EQ(make_zone("intel-rapl:1", "500000\n", "262143328850\n"), 0);
  /* Inside package 0, and the MMIO copy of it: neither is added. */
  ASSERT_EQ(make_zone("intel-rapl:0:0", "7000000\n", "262143328850\n"), 0);
  ASSERT_EQ(make_zone("intel-rapl-mmio:0", "9000000\n", "262143328850\n"), 0);
  mb_energy_window w;
  mb_energy e;
  mb__energy_start(&w);
  ASSERT(w.ok);
  ASSERT_EQ(w.n, 2);
  ASSERT_EQ(set_energy("intel-rapl:0", "3000000\n"), 0); /* +2 J */
  ASSERT_EQ(set_energy("intel-rapl:1", "1500000\n"), 0); /* +1 J */
  ASSERT_EQ(set_energy("intel-rapl:0:0", "99000000\n"), 0);
  ASSERT_EQ(set_energy("intel-rapl-mmio:0", "99000000\n"), 0);
  mb__energy_stop(&w, 6, &e);
  drop_tree();
  ASSERT(e.available);
  ASSERT_NEAR(e.joules, 3.0, 1e-9);
  ASSERT_NEAR(e.joules_per_inference, 0.5, 1e-9);
  ASSERT_STR_EQ(e.domains, "intel-rapl:0,intel-rapl:1");
  return 0;
}

TEST(energy_wraps_around) {
  /* The counter passed max_energy_range_uj and restarted from 0. */
  ASSERT_NEAR(mb__energy_delta_uj(262143000000ull, 671150ull, 262143328850ull),
              1000000.0, 1e-6);
  ASSERT_NEAR(mb__energy_delta_uj(10, 25, 100), 15.0, 1e-12);
  ASSERT_EQ(make_tree(), 0);
  ASSERT_EQ(make_zone("intel-rapl:0", "262143000000\n", "262143328850\n"), 0);
  mb_energy_window w;
  mb_energy e;
  mb__energy_start(&w);
  ASSERT_EQ(set_energy("intel-rapl:0", "671150\n"), 0);
  mb__energy_stop(&w, 4, &e);
  drop_tree();
  ASSERT(e.available);
  ASSERT_NEAR(e.joules, 1.0, 1e-9);
  ASSERT_NEAR(e.joules_per_inference, 0.25, 1e-9);
  return 0;
}

/* The reason an unprivileged process gets from a tree whose energy_uj is
 * unreadable to all but root (as Linux 5.10 made it, 0400 root): run as
 * `nobody` in a child when this is root, so the check holds either way. */
static int reason_as_unprivileged(char *reason, size_t size) {
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
      _exit(2);
    mb_energy_window w;
    mb__energy_start(&w);
    ssize_t n = write(fds[1], w.unavailable, strlen(w.unavailable));
    _exit(n < 0 ? 3 : 0);
  }
  close(fds[1]);
  ssize_t n = read(fds[0], reason, size - 1);
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  reason[n > 0 ? n : 0] = '\0';
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

TEST(energy_unavailable_says_why) {
  mb_energy_window w;
  mb_energy e;
  /* No powercap folder at all: a VM. */
  setenv("MODELBENCH_POWERCAP_DIR", "/nonexistent/powercap", 1);
  mb__energy_start(&w);
  mb__energy_stop(&w, 10, &e);
  ASSERT(!e.available);
  ASSERT_CONTAINS(e.unavailable, "no /nonexistent/powercap");
  ASSERT_CONTAINS(e.unavailable, "exposes no RAPL");

  /* A folder without a package zone. */
  ASSERT_EQ(make_tree(), 0);
  mb__energy_start(&w);
  mb__energy_stop(&w, 10, &e);
  ASSERT(!e.available);
  ASSERT_CONTAINS(e.unavailable, "no RAPL package zone");

  /* A zone whose counter is missing. */
  ASSERT_EQ(make_zone("intel-rapl:0", NULL, "100\n"), 0);
  mb__energy_start(&w);
  mb__energy_stop(&w, 10, &e);
  ASSERT(!e.available);
  ASSERT_CONTAINS(e.unavailable, "cannot read");
  ASSERT_CONTAINS(e.unavailable, "intel-rapl:0/energy_uj");

  /* Readable only by root. */
  char path[256], reason[256];
  snprintf(path, sizeof path, "%s/intel-rapl:0/energy_uj", tree);
  ASSERT_EQ(test_write_text(path, "5\n"), 0);
  chmod(path, 0000);
  int got = reason_as_unprivileged(reason, sizeof reason);
  drop_tree();
  ASSERT_EQ(got, 0);
  ASSERT_CONTAINS(reason, "energy_uj is readable only by root");
  ASSERT_CONTAINS(reason, "CVE-2020-8694");
  return 0;
}

/* ---- cost ---- */

TEST(cost_per_million) {
  /* 0.05 per core-hour, 2 cores, 100 inferences/s: 0.01 s each, so a
   * million take 10,000 s on 2 cores = 5.556 core-hours = 0.2778. */
  ASSERT_NEAR(mb__cost_per_million(0.05, 2, 100.0), 0.05 * 2 * 1e4 / 3600.0,
              1e-12);
  ASSERT_NEAR(mb__cost_per_million(1.0, 1, 3600.0), 1e6 / 3600.0 / 3600.0,
              1e-12);
  /* Twice the cores at the same throughput cost twice as much. */
  ASSERT_NEAR(mb__cost_per_million(0.05, 4, 100.0),
              2 * mb__cost_per_million(0.05, 2, 100.0), 1e-12);
  ASSERT(mb__cost_per_million(0.0, 2, 100.0) < 0);
  ASSERT(mb__cost_per_million(0.05, 2, 0.0) < 0);
  ASSERT(mb__cost_per_million(0.05, 0, 100.0) < 0);
  return 0;
}

int main(int argc, char **argv) {
  static const mb_test_case cases[] = {
      TEST_ENTRY(steady_after_warming),
      TEST_ENTRY(steady_ignores_a_lone_outlier),
      TEST_ENTRY(steady_never),
      TEST_ENTRY(energy_sums_package_zones),
      TEST_ENTRY(energy_wraps_around),
      TEST_ENTRY(energy_unavailable_says_why),
      TEST_ENTRY(cost_per_million),
  };
  return mb_test_main(argc, argv, cases, MB_ARRAY_COUNT(cases));
}
