/* Load scenarios: MLPerf LoadGen's questions over prepared sessions.
 *
 *   single-stream  one query at a time, each issued when the previous one
 *                  completes; LoadGen's metric is the p90 latency.
 *   server         queries arrive as a seeded Poisson process at a target
 *                  QPS and are served first come, first served by
 *                  `concurrency` sessions, each on a thread of its own. A
 *                  query's latency counts from its *scheduled* arrival, so
 *                  a server that falls behind shows its queue in the
 *                  latency (no coordinated omission).
 *   offline        every query is there at the start; the sessions take
 *                  them until the query set is done; the metric is
 *                  samples per second.
 * A query is one inference of the run's batch size. find-peak searches the
 * highest server QPS whose run is valid and meets the SLO: bracket by
 * doubling or halving from a first guess, then bisect.
 *
 * A run is valid (LoadGen's rules) when it lasted --min-duration, held
 * --min-queries, served every query before --max-time and, for a server,
 * completed queries at no less than the schedule's own rate minus
 * --qps-tolerance; otherwise it is INVALID with every reason. The SLO is
 * judged apart from validity.
 *
 * Threads pull: each takes the next query index from an atomic counter,
 * waits until that query is there, runs it and records when it started
 * and ended. Taking indices in order makes the service FIFO, so N sessions
 * form an N-server queue; latency, service time and queue depth come from
 * the recorded times afterwards. Only run() sits between a query's two
 * clock reads.
 *
 * A server run adds a generator thread, so that the harness adds (almost)
 * nothing to the latency it charges to the model. The generator issues
 * each query at its scheduled arrival: it sleeps in the kernel until a
 * margin before it, then spins to the arrival, and publishes the query
 * with its issue time. An idle session waits for its query awake: it
 * knows when the query is due (the schedule is the harness's own) and
 * spins on the generator's counter, so the hand-off costs a cache line,
 * not a wake-up. Where the CPUs are enough for every session's threads
 * and the generator (spin_always), neither ever sleeps: a timer wake-up
 * on a VM whose idle vCPU halts is late by 0.1 to 2 ms at its tail, which
 * no margin covers at a bearable cost. Otherwise the generator and an
 * idle session sleep until a margin before the arrival and spin the rest;
 * the margin is learned, as each thread keeps a histogram of its own
 * wake-ups' lateness and spins for its p99.5 plus a pad (spin_margin),
 * within a low cap (LOAD_SPIN_MARGIN_MAX_S says why);
 * the generator then spins only while a session waits for the query, and
 * a session still waiting LOAD_SPIN_LIMIT_S after its query was due (the
 * generator descheduled) falls back to short sleeps, counted. The cost is
 * CPU: a whole core each for the generator and every idle session while
 * spinning throughout, a margin per query otherwise.
 * Each run reports the generator's lateness and the hand-off delay apart
 * from the latency, how the threads waited (spin_always, the generator's
 * margin), the hypervisor's steal over the run, and the p99 an ideal
 * FIFO queue would give with the same arrivals and the run's own service
 * times; a run whose p99 exceeds that by more than the harness
 * explains is flagged. */
#include "bench/bench_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* How often the main thread reports progress while the sessions work. */
#define LOAD_PROGRESS_INTERVAL_S 0.2
/* Server, CPUs short for spinning throughout: the generator and an idle
 * session sleep until a margin before a query's arrival and spin the
 * rest. The margin starts at LOAD_SPIN_MARGIN_INIT_S and then follows
 * each thread's own wake-ups: their lateness's LOAD_SPIN_MARGIN_QUANTILE
 * plus LOAD_SPIN_MARGIN_PAD_S, within [MIN, MAX], once
 * LOAD_SPIN_MARGIN_LEARN wake-ups are known. The cap is low on purpose:
 * with the CPUs short, a spinning thread takes one from a busy session,
 * and a wake-up's lateness there is mostly that contention, which a
 * longer spin makes worse (measured on a 2-CPU KVM guest, 2 sessions at
 * 1100 QPS: a 0.2 ms margin gave lateness p99 0.70-0.81 ms and hand-off
 * p99 0.20 ms, 0.5 ms gave 0.89-0.93 and 0.52, 2 ms gave 1.0-1.6 and
 * 1.4); on bare metal, whose wake-ups are late by microseconds, the
 * margin shrinks and so does the CPU it takes. The histogram has
 * LOAD_WAKE_BINS bins of LOAD_WAKE_BIN_S; later wake-ups count in the
 * last. */
#define LOAD_SPIN_MARGIN_INIT_S 200e-6
#define LOAD_SPIN_MARGIN_MIN_S 50e-6
#define LOAD_SPIN_MARGIN_MAX_US 250
#define LOAD_SPIN_MARGIN_MAX_S (LOAD_SPIN_MARGIN_MAX_US * 1e-6)
#define LOAD_SPIN_MARGIN_PAD_S 50e-6
#define LOAD_SPIN_MARGIN_QUANTILE 0.995
#define LOAD_SPIN_MARGIN_LEARN 64
#define LOAD_WAKE_BIN_US 10
#define LOAD_WAKE_BIN_S (LOAD_WAKE_BIN_US * 1e-6)
/* In integers: a floating-point expression is no constant one to clang. */
_Static_assert(LOAD_WAKE_BINS *LOAD_WAKE_BIN_US > LOAD_SPIN_MARGIN_MAX_US,
               "the histogram reaches past the largest margin");
/* Sleeps are cut into slices of at most this, so a stop is seen soon. */
#define LOAD_SLEEP_SLICE_S 0.05
/* A session spinning this long past its query's arrival falls back to
 * sleeps of LOAD_FALLBACK_SLEEP_S: a generator with a CPU issues within a
 * microsecond, so it was descheduled, and on a machine short of CPUs the
 * spinning session would keep it off one. The generator takes such sleeps
 * instead of spinning while no session waits, where no CPU is spare. */
#define LOAD_SPIN_LIMIT_S 50e-6
#define LOAD_FALLBACK_SLEEP_S 50e-6
/* A run's p99 may exceed the ideal queue's by what the harness explains
 * (lateness p99 + hand-off p99) plus this share of the ideal p99. */
#define LOAD_EXCESS_TOLERANCE 0.10
/* find-peak: each direction doubles or halves at most this often, and the
 * whole search runs at most this many trials. */
#define FIND_PEAK_MAX_STEPS 12
#define FIND_PEAK_MAX_TRIALS 32

static const char *const scenario_names[] = {
#define MB_X(name, str) str,
    MB_LOAD_SCENARIO_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(scenario_names) == MB_LOAD_SCENARIO_COUNT,
               "one name per scenario");

const char *mb_load_scenario_name(mb_load_scenario scenario) {
  return (unsigned)scenario < MB_LOAD_SCENARIO_COUNT ? scenario_names[scenario]
                                                     : "unknown";
}

mb_status mb_load_scenario_parse(const char *name, mb_load_scenario *out,
                                 mb_error *err) {
  for (int i = 0; name && i < MB_LOAD_SCENARIO_COUNT; i++)
    if (strcmp(name, scenario_names[i]) == 0) {
      *out = (mb_load_scenario)i;
      return MB_STATUS_OK;
    }
  return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                   "scenario '%s': expected single-stream, server or offline",
                   name ? name : "");
}

mb_status mb__slo_parse(const char *text, double *percentile_out,
                        double *ms_out, mb_error *err) {
  static const struct {
    const char *suffix;
    double to_ms;
  } units[] = {{"ms", 1.0}, {"us", 1e-3}, {"s", 1e3}, {"", 1.0}};
  const char *eq = text ? strchr(text, '=') : NULL;
  char percentile[32], value[64];
  if (!eq || (text[0] != 'p' && text[0] != 'P') ||
      (size_t)(eq - text) >= sizeof percentile ||
      strlen(eq + 1) >= sizeof value)
    goto bad;
  memcpy(percentile, text + 1, (size_t)(eq - text - 1));
  percentile[eq - text - 1] = '\0';
  snprintf(value, sizeof value, "%s", eq + 1);
  char *end;
  double p = strtod(percentile, &end);
  if (!percentile[0] || *end || !(p > 0 && p <= 100))
    goto bad;
  for (size_t i = 0; i < MB_ARRAY_COUNT(units); i++) {
    size_t n = strlen(value), k = strlen(units[i].suffix);
    if (n <= k || strcmp(value + n - k, units[i].suffix) != 0)
      continue;
    value[n - k] = '\0';
    double v = strtod(value, &end);
    if (*end || !(v > 0) || !isfinite(v))
      goto bad;
    *percentile_out = p;
    *ms_out = v * units[i].to_ms;
    return MB_STATUS_OK;
  }
bad:
  return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                   "SLO '%s': expected pNN=LATENCY such as p99=20ms (a "
                   "percentile in (0, 100], a latency > 0 in ms, us or s)",
                   text ? text : "");
}

/* ------------------------------------------------------------------------ */
/* The schedule                                                              */
/* ------------------------------------------------------------------------ */

/* splitmix64: the same generator as generated inputs, so a schedule is the
 * same on every machine. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

mb_status mb__load_schedule(uint64_t seed, double qps, double min_duration,
                            int64_t min_queries, double max_seconds,
                            double **arrivals_out, int64_t *n_out,
                            mb_error *err) {
  *arrivals_out = NULL;
  *n_out = 0;
  if (!(qps > 0) || !isfinite(qps))
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "server scenario: the QPS must be > 0 (got %g)", qps);
  double cap_s = max_seconds > 0 ? max_seconds : 1e300;
  int64_t cap = 1024, n = 0;
  double *t = malloc(sizeof *t * (size_t)cap);
  if (!t)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot allocate the "
                     "arrival schedule");
  uint64_t state = seed ^ 0x6c6f616473636864ull; /* apart from the inputs */
  double now = 0.0;
  for (;;) {
    /* Uniform in (0, 1] from the top 53 bits, then an exponential gap:
     * the gaps of a Poisson process. */
    double u = ((double)(next_random(&state) >> 11) + 1.0) * 0x1.0p-53;
    now += -log(u) / qps;
    if (now > cap_s)
      break;
    if (n == cap) {
      if (cap >= ((int64_t)1 << 31)) {
        free(t);
        return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                         "server scenario: more than %lld queries scheduled "
                         "(lower --qps or --min-duration)",
                         (long long)cap);
      }
      double *grown = realloc(t, sizeof *t * (size_t)cap * 2);
      if (!grown) {
        free(t);
        return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                         "cannot grow the arrival schedule past %lld queries",
                         (long long)cap);
      }
      t = grown;
      cap *= 2;
    }
    t[n++] = now;
    /* As LoadGen: the last arrival is the first at or past the minimum
     * duration, once there are enough queries. */
    if (n >= min_queries && now >= min_duration)
      break;
  }
  *arrivals_out = t;
  *n_out = n;
  return MB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* One run                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct query_record {
  int64_t index;
  /* Seconds from the run's start: when the session became free before
   * this query (its previous end, or the start), started and ended it. */
  double free, start, end;
} query_record;

struct load_run;

/* One thread's spin margin, learned from its own timer wake-ups (see
 * LOAD_SPIN_MARGIN_INIT_S). */
typedef struct spin_margin {
  uint32_t late[LOAD_WAKE_BINS]; /* wake-ups by lateness */
  int64_t wakeups;
  double seconds; /* the margin now; INFINITY: spins throughout */
} spin_margin;

/* One session and the thread that drives it. */
typedef struct server {
  struct load_run *run;
  void *session;
  pthread_t thread;
  query_record *records; /* grown by this thread only */
  int64_t n_records, cap;
  int64_t idle_sleeps, spin_fallbacks; /* server: how waits went */
  spin_margin margin;                  /* server: this session's */
} server;

typedef struct load_run {
  const mb_runtime *rt;
  const mb_bench_job *job;
  const double *arrivals; /* server: n arrival times; else NULL (at once) */
  int64_t n;              /* queries to issue; 0: until both minimums */
  int64_t min_queries;
  double min_duration, max_seconds;
  double t0;
  atomic_llong next; /* the next query index to take */
  /* Server: queries the generator has issued (0..issued-1), and when,
   * in seconds from t0 (written before `issued` is released). */
  atomic_llong issued;
  double *issued_at;
  /* CPUs for every session's threads and the generator: they spin
   * throughout (see the top of this file and wait_until_due). */
  bool spin_always;
  spin_margin margin; /* the generator's */
  atomic_llong done;  /* queries completed, for progress */
  atomic_int stop;    /* a failure or max_seconds: take no more */
  atomic_int running;
  /* The last session to end signals `ended` (under end_lock), so that the
   * main thread waits without waking often: each of its wake-ups takes a
   * CPU from a spinning thread. */
  pthread_mutex_t end_lock;
  pthread_cond_t ended;
  pthread_mutex_t lock; /* guards status and err */
  mb_status status;
  mb_error err;
} load_run;

/* What a run measured, before it becomes (part of) a result. */
typedef struct run_outcome {
  int64_t queries, served, unserved;
  double *latency_ms;       /* queries entries, from arrival, query order */
  mb_latency_stats latency; /* of latency_ms */
  mb_latency_stats service; /* of run() alone, served queries */
  mb_load_delay_us lateness, handoff; /* server */
  int64_t idle_sleeps, spin_fallbacks;
  int spin_always;
  double spin_margin_us; /* server: the generator's, at the end */
  double steal_ms;       /* the hypervisor's, over the run; NAN: unknown */
  double ideal_p99_ms;   /* server: the ideal queue's */
  int harness_excess;
  double service_sum_s;
  double duration_s, achieved_qps, scheduled_qps, target_qps;
  double queue_mean;
  int64_t queue_max;
  int valid;
  char reason[256];
  double slo_latency_ms, over_slo_share;
  int slo_met;
} run_outcome;

static void outcome_free(run_outcome *o) {
  free(o->latency_ms);
  memset(o, 0, sizeof *o);
}

/* t, in mb__now's seconds (CLOCK_MONOTONIC), as a timespec. */
static struct timespec monotonic_at(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

static void sleep_until(double t) {
  struct timespec ts = monotonic_at(t);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

double mb__load_spin_margin(const uint32_t late[LOAD_WAKE_BINS],
                            int64_t wakeups) {
  if (wakeups < LOAD_SPIN_MARGIN_LEARN)
    return LOAD_SPIN_MARGIN_INIT_S;
  int64_t below = (int64_t)ceil(LOAD_SPIN_MARGIN_QUANTILE * (double)wakeups);
  int64_t seen = 0;
  int k = 0;
  for (; k < LOAD_WAKE_BINS - 1; k++)
    if ((seen += late[k]) >= below)
      break;
  /* The bin's upper edge: its wake-ups were at most that late. */
  return MB_MIN(MB_MAX((k + 1) * LOAD_WAKE_BIN_S + LOAD_SPIN_MARGIN_PAD_S,
                       LOAD_SPIN_MARGIN_MIN_S),
                LOAD_SPIN_MARGIN_MAX_S);
}

static void spin_margin_init(spin_margin *m, bool spin_always) {
  memset(m, 0, sizeof *m);
  m->seconds = spin_always ? INFINITY : LOAD_SPIN_MARGIN_INIT_S;
}

/* Sleeps until t, learning from how late the wake-up was: once enough
 * wake-ups are known, the margin becomes their lateness's quantile plus
 * the pad, so that a sleep to the margin before an arrival wakes before
 * it but for the rare late wake-up. */
static void sleep_until_learning(spin_margin *m, double t) {
  sleep_until(t);
  double late = mb__now() - t;
  int bin =
      late <= 0 ? 0 : (int)MB_MIN(late / LOAD_WAKE_BIN_S, LOAD_WAKE_BINS - 1);
  m->late[bin]++;
  m->wakeups++;
  if (m->wakeups >= LOAD_SPIN_MARGIN_LEARN && m->wakeups % 16 == 0)
    m->seconds = mb__load_spin_margin(m->late, m->wakeups);
}

/* A spin-wait's pause: lets the sibling hyperthread run and saves power. */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* The generator's wait for query i's arrival: with CPUs to spare
 * (spin_always) it spins throughout; otherwise it sleeps until its margin
 * before the arrival (in slices), then spins to it. Where the
 * sessions' threads and the generator outnumber the CPUs, it spins only
 * while a session waits for the query; while none does (every session busy
 * with earlier queries: this one will queue anyway) it takes short sleeps,
 * leaving the CPU to the sessions near a small machine's peak; a session
 * freed meanwhile waits for the query, and that wait shows as the
 * generator's lateness. False when the run stopped meanwhile. */
static bool wait_until_due(load_run *run, int64_t i) {
  double due = run->t0 + run->arrivals[i];
  for (;;) {
    if (atomic_load_explicit(&run->stop, memory_order_relaxed))
      return false;
    double now = mb__now();
    if (now >= due)
      return true;
    double margin = run->margin.seconds;
    if (now < due - margin)
      sleep_until_learning(&run->margin,
                           MB_MIN(due - margin, now + LOAD_SLEEP_SLICE_S));
    else if (!run->spin_always &&
             atomic_load_explicit(&run->next, memory_order_relaxed) <= i)
      sleep_until(MB_MIN(due, now + LOAD_FALLBACK_SLEEP_S));
    else
      cpu_relax();
  }
}

static void run_fail(load_run *run, mb_status status, const mb_error *err) {
  pthread_mutex_lock(&run->lock);
  if (!run->status) {
    run->status = status;
    run->err = *err;
  }
  pthread_mutex_unlock(&run->lock);
  atomic_store(&run->stop, 1);
}

/* The next query to serve, or false when the run is over. */
static bool take_query(load_run *run, int64_t *index_out) {
  if (atomic_load(&run->stop))
    return false;
  int64_t i = atomic_fetch_add(&run->next, 1);
  if (run->n > 0) {
    if (i >= run->n)
      return false;
  } else {
    double elapsed = mb__now() - run->t0;
    if ((i >= run->min_queries && elapsed >= run->min_duration) ||
        elapsed >= run->max_seconds)
      return false;
  }
  *index_out = i;
  return true;
}

/* Server: issues the queries at their arrivals, in order. */
static void *generate(void *arg) {
  load_run *run = arg;
  for (int64_t i = 0; i < run->n; i++) {
    if (!wait_until_due(run, i))
      break;
    run->issued_at[i] = mb__now() - run->t0;
    atomic_store_explicit(&run->issued, i + 1, memory_order_release);
  }
  return NULL;
}

/* Server: waits, awake, until the generator has issued query i. False
 * when the run stopped meanwhile. */
static bool await_issue(server *s, int64_t i) {
  load_run *run = s->run;
  double due = run->t0 + run->arrivals[i];
  bool slept = false, fell_back = false;
  for (;;) {
    if (atomic_load_explicit(&run->issued, memory_order_acquire) > i)
      return true;
    if (atomic_load_explicit(&run->stop, memory_order_relaxed))
      return false;
    double now = mb__now(), margin = s->margin.seconds;
    if (now < due - margin) {
      /* Far ahead: sleep in the kernel, up to the margin. */
      s->idle_sleeps += !slept;
      slept = true;
      sleep_until_learning(&s->margin,
                           MB_MIN(due - margin, now + LOAD_SLEEP_SLICE_S));
    } else if (!run->spin_always && now > due + LOAD_SPIN_LIMIT_S) {
      s->spin_fallbacks += !fell_back;
      fell_back = true;
      sleep_until(now + LOAD_FALLBACK_SLEEP_S);
    } else {
      cpu_relax();
    }
  }
}

static void *serve(void *arg) {
  server *s = arg;
  load_run *run = s->run;
  const mb_bench_job *job = run->job;
  mb_error err = {MB_STATUS_OK, ""};
  double free_s = 0; /* when this session became free, from t0 */
  int64_t i;
  while (take_query(run, &i)) {
    /* Room for the record before the wait, its pages touched, so that no
     * allocation or page fault sits in the hand-off. */
    if (s->n_records == s->cap) {
      int64_t cap = s->cap ? s->cap * 2 : 4096;
      query_record *grown = realloc(s->records, sizeof *grown * (size_t)cap);
      if (!grown) {
        mb__error(&err, MB_STATUS_OUT_OF_MEMORY,
                  "cannot record more than %lld queries", (long long)s->cap);
        run_fail(run, MB_STATUS_OUT_OF_MEMORY, &err);
        break;
      }
      memset(grown + s->cap, 0, sizeof *grown * (size_t)(cap - s->cap));
      s->records = grown;
      s->cap = cap;
    }
    if (run->arrivals && !await_issue(s, i))
      break;
    const mb_tensor *const *inputs =
        (const mb_tensor *const *)job->samples[i % job->n_samples];
    double start = mb__now();
    if (start - run->t0 > run->max_seconds) {
      atomic_store(&run->stop, 1); /* this one and the rest: unserved */
      break;
    }
    mb_status status = run->rt->run(s->session, inputs, &err);
    double end = mb__now();
    if (status) {
      mb__error_prefix(&err, status, "query %lld", (long long)i + 1);
      run_fail(run, status, &err);
      break;
    }
    s->records[s->n_records++] =
        (query_record){i, free_s, start - run->t0, end - run->t0};
    free_s = end - run->t0;
    atomic_fetch_add(&run->done, 1);
  }
  pthread_mutex_lock(&run->end_lock);
  if (atomic_fetch_sub(&run->running, 1) == 1)
    pthread_cond_signal(&run->ended);
  pthread_mutex_unlock(&run->end_lock);
  return NULL;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Queries waiting for a session when each query arrives: those before it
 * that had not started by then. start: n entries, +inf when never
 * started; arrivals ascending. */
static void queue_depth(const double *arrivals, const double *start, int64_t n,
                        double *mean_out, int64_t *max_out) {
  double *sorted = malloc(sizeof *sorted * (size_t)MB_MAX(n, 1));
  *mean_out = 0;
  *max_out = 0;
  if (!sorted || n == 0) {
    free(sorted);
    return;
  }
  memcpy(sorted, start, sizeof *sorted * (size_t)n);
  qsort(sorted, (size_t)n, sizeof *sorted, compare_double);
  double sum = 0;
  int64_t started = 0; /* queries started by arrivals[j] */
  for (int64_t j = 0; j < n; j++) {
    while (started < n && sorted[started] <= arrivals[j])
      started++;
    int64_t depth = MB_MAX(j - started, (int64_t)0);
    sum += (double)depth;
    *max_out = MB_MAX(*max_out, depth);
  }
  *mean_out = sum / (double)n;
  free(sorted);
}

mb_status mb__load_ideal_queue(const double *arrivals, const double *service,
                               int64_t n, int servers, double *latency_out,
                               mb_error *err) {
  if (servers < 1)
    return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                     "ideal queue: servers must be >= 1 (got %d)", servers);
  double *free_at = calloc((size_t)servers, sizeof *free_at);
  if (!free_at)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "cannot simulate a queue of %d servers", servers);
  for (int k = 0; k < servers; k++)
    free_at[k] = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    int k = 0;
    for (int j = 1; j < servers; j++)
      if (free_at[j] < free_at[k])
        k = j;
    double start = MB_MAX(free_at[k], arrivals[i]);
    free_at[k] = start + service[i];
    latency_out[i] = free_at[k] - arrivals[i];
  }
  free(free_at);
  return MB_STATUS_OK;
}

void mb__load_delay_summary(double *values, int64_t n, mb_load_delay_us *out) {
  memset(out, 0, sizeof *out);
  if (n <= 0)
    return;
  qsort(values, (size_t)n, sizeof *values, compare_double);
  out->p50 = mb__percentile(values, n, 50);
  out->p99 = mb__percentile(values, n, 99);
  out->max = values[n - 1];
}

/* Both are >= 0 by construction (the generator issues at or after the
 * arrival; a session starts after it saw the query and was free); the
 * clamp keeps a clock's rounding out of the figures. */
double mb__load_lateness(double arrival, double issued) {
  return MB_MAX(issued - arrival, 0.0);
}

double mb__load_handoff(double issued, double session_free, double start) {
  return MB_MAX(start - MB_MAX(issued, session_free), 0.0);
}

/* Server: the harness's delays, the ideal queue's p99 and whether the
 * run's p99 exceeds it by more than the delays explain. `order`: the
 * served queries' records by query index (NULL where unserved). */
static mb_status harness_figures(const load_run *run,
                                 const query_record *const *order, int64_t n,
                                 int servers, run_outcome *o, mb_error *err) {
  mb_status status = MB_STATUS_OK;
  size_t size = sizeof(double) * (size_t)MB_MAX(n, 1);
  double *late = malloc(size), *handoff = malloc(size);
  double *arrival = malloc(size), *service = malloc(size);
  double *ideal = malloc(size);
  if (!late || !handoff || !arrival || !service || !ideal) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate the harness figures of %lld queries",
                       (long long)n);
    goto done;
  }
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    const query_record *q = order[i];
    if (!q)
      continue;
    double issued = run->issued_at[i];
    late[m] = mb__load_lateness(run->arrivals[i], issued) * 1e6;
    handoff[m] = mb__load_handoff(issued, q->free, q->start) * 1e6;
    arrival[m] = run->arrivals[i];
    service[m] = q->end - q->start;
    m++;
  }
  mb__load_delay_summary(late, m, &o->lateness);
  o->spin_always = run->spin_always;
  o->spin_margin_us = run->spin_always ? NAN : run->margin.seconds * 1e6;
  mb__load_delay_summary(handoff, m, &o->handoff);
  if (m == 0)
    goto done;
  if ((status = mb__load_ideal_queue(arrival, service, m, servers, ideal, err)))
    goto done;
  qsort(ideal, (size_t)m, sizeof *ideal, compare_double);
  o->ideal_p99_ms = mb__percentile(ideal, m, 99) * 1e3;
  double explained_ms = (o->lateness.p99 + o->handoff.p99) * 1e-3;
  o->harness_excess =
      o->latency.p99 >
      o->ideal_p99_ms * (1.0 + LOAD_EXCESS_TOLERANCE) + explained_ms;
done:
  free(late);
  free(handoff);
  free(arrival);
  free(service);
  free(ideal);
  return status;
}

/* Appends "; " and a reason to o->reason. */
static void add_reason(run_outcome *o, const char *fmt, ...) MB_PRINTF(2, 3);
static void add_reason(run_outcome *o, const char *fmt, ...) {
  size_t used = strlen(o->reason);
  if (used && used + 2 < sizeof o->reason) {
    memcpy(o->reason + used, "; ", 3);
    used += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->reason + used, sizeof o->reason - used, fmt, ap);
  va_end(ap);
  o->valid = 0;
}

/* Latency, service, queue depth, validity and the SLO from the records. */
static mb_status summarise(const load_run *run, const server *servers,
                           int n_servers, mb_load_scenario scenario,
                           double stop_s, run_outcome *o, mb_error *err) {
  const mb_load_config *lc = &run->job->config->load;
  int64_t served = 0;
  for (int k = 0; k < n_servers; k++)
    served += servers[k].n_records;
  int64_t n = run->n > 0 ? run->n : served;
  mb_status status = MB_STATUS_OK;
  double *start = malloc(sizeof *start * (size_t)MB_MAX(n, 1));
  double *service = malloc(sizeof *service * (size_t)MB_MAX(served, 1));
  const query_record **order = calloc((size_t)MB_MAX(n, 1), sizeof *order);
  o->latency_ms = malloc(sizeof *o->latency_ms * (size_t)MB_MAX(n, 1));
  if (!start || !service || !order || !o->latency_ms) {
    status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate the statistics of %lld queries",
                       (long long)n);
    goto done;
  }
  for (int64_t i = 0; i < n; i++) {
    start[i] = INFINITY;
    /* Never started: it waited at least until the stop. */
    double arrival = run->arrivals ? run->arrivals[i] : 0.0;
    o->latency_ms[i] = MB_MAX(stop_s - arrival, 0.0) * 1e3;
  }
  int64_t k_service = 0;
  o->duration_s = 0;
  for (int k = 0; k < n_servers; k++)
    for (int64_t r = 0; r < servers[k].n_records; r++) {
      const query_record *q = &servers[k].records[r];
      if (q->index < 0 || q->index >= n)
        continue;
      /* Single-stream and offline queries arrive when a session takes
       * them: their latency is their run. */
      double arrival = run->arrivals ? run->arrivals[q->index] : q->start;
      start[q->index] = q->start;
      order[q->index] = q;
      o->latency_ms[q->index] = (q->end - arrival) * 1e3;
      service[k_service++] = (q->end - q->start) * 1e3;
      o->service_sum_s += q->end - q->start;
      o->duration_s = MB_MAX(o->duration_s, q->end);
    }
  o->queries = n;
  o->served = served;
  o->unserved = n - served;
  if ((status = mb__latency_stats(o->latency_ms, n, &o->latency, err)) ||
      (status = mb__latency_stats(service, served, &o->service, err)))
    goto done;
  o->achieved_qps = o->duration_s > 0 ? (double)served / o->duration_s : 0;
  if (run->arrivals && n > 0 && run->arrivals[n - 1] > 0) {
    o->scheduled_qps = (double)n / run->arrivals[n - 1];
    queue_depth(run->arrivals, start, n, &o->queue_mean, &o->queue_max);
  }
  if (run->arrivals && run->issued_at) {
    for (int k = 0; k < n_servers; k++) {
      o->idle_sleeps += servers[k].idle_sleeps;
      o->spin_fallbacks += servers[k].spin_fallbacks;
    }
    if ((status = harness_figures(run, order, n, n_servers, o, err)))
      goto done;
  }

  o->valid = 1;
  o->reason[0] = '\0';
  if (o->unserved > 0)
    add_reason(o, "%lld of %lld queries not served within --max-time %g s",
               (long long)o->unserved, (long long)n, run->max_seconds);
  if (o->duration_s < run->min_duration)
    add_reason(o, "ran %.3g s, below --min-duration %g s%s", o->duration_s,
               run->min_duration,
               o->duration_s >= run->max_seconds * 0.999 ||
                       (run->arrivals && n > 0 &&
                        run->arrivals[n - 1] < run->min_duration)
                   ? " (cut by --max-time)"
                   : "");
  if (served < run->min_queries)
    add_reason(o, "%lld queries, below --min-queries %lld", (long long)served,
               (long long)run->min_queries);
  if (scenario == MB_LOAD_SERVER && o->scheduled_qps > 0 &&
      o->achieved_qps < o->scheduled_qps * (1.0 - lc->qps_tolerance))
    add_reason(o,
               "achieved %.4g QPS, below the scheduled %.4g QPS by more "
               "than %g%%: the sessions cannot keep up",
               o->achieved_qps, o->scheduled_qps, lc->qps_tolerance * 100.0);

  o->slo_met = -1;
  if (lc->slo_percentile > 0 && n > 0) {
    double *sorted = malloc(sizeof *sorted * (size_t)n);
    if (!sorted) {
      status = mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot sort latencies");
      goto done;
    }
    memcpy(sorted, o->latency_ms, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_double);
    o->slo_latency_ms = mb__percentile(sorted, n, lc->slo_percentile);
    int64_t over = 0;
    for (int64_t i = 0; i < n; i++)
      over += sorted[i] > lc->slo_ms;
    o->over_slo_share = (double)over / (double)n;
    o->slo_met = o->slo_latency_ms <= lc->slo_ms;
    free(sorted);
  }

done:
  free(start);
  free(service);
  free(order);
  return status;
}

/* One run of `scenario` on the sessions: server at `qps` (its schedule),
 * single-stream or offline. */
static mb_status run_once(const mb_runtime *rt, void *const *sessions,
                          int n_sessions, const mb_bench_job *job,
                          mb_load_scenario scenario, double qps,
                          const mb_progress_sink *progress, run_outcome *o,
                          mb_error *err) {
  const mb_bench_config *c = job->config;
  const mb_load_config *lc = &c->load;
  double *arrivals = NULL;
  server *servers = NULL;
  int started = 0;
  mb_status status = MB_STATUS_OK;
  load_run run;
  memset(o, 0, sizeof *o);
  memset(&run, 0, sizeof run);
  run.rt = rt;
  run.job = job;
  run.min_queries = lc->min_queries;
  run.min_duration = lc->min_duration;
  run.max_seconds = c->max_seconds > 0 ? c->max_seconds : 1e300;
  o->target_qps = qps;
  if (scenario == MB_LOAD_SERVER) {
    int64_t n;
    if ((status =
             mb__load_schedule(c->seed, qps, lc->min_duration, lc->min_queries,
                               run.max_seconds, &arrivals, &n, err)))
      return status;
    if (n == 0) {
      free(arrivals);
      return mb__error(err, MB_STATUS_INVALID_ARGUMENT,
                       "server scenario: no query arrives within --max-time "
                       "%g s at %g QPS",
                       run.max_seconds, qps);
    }
    run.arrivals = arrivals;
    run.n = n;
    /* Written now, so that the generator's stores do not fault a page in
     * between an issue's clock read and its release. */
    if (!(run.issued_at = malloc(sizeof *run.issued_at * (size_t)n))) {
      free(arrivals);
      return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                       "cannot allocate the issue times of %lld queries",
                       (long long)n);
    }
    for (int64_t i = 0; i < n; i++)
      run.issued_at[i] = NAN; /* not issued */
  } else if (scenario == MB_LOAD_OFFLINE && lc->qps > 0) {
    /* LoadGen sizes the offline query set from the expected rate. */
    run.n = MB_MAX(lc->min_queries,
                   (int64_t)ceil(lc->qps * lc->min_duration /
                                 (double)MB_MAX(job->batch_size, 1)));
  }
  int n_servers = scenario == MB_LOAD_SINGLE_STREAM ? 1 : n_sessions;
  servers = calloc((size_t)n_servers, sizeof *servers);
  if (!servers) {
    free(arrivals);
    free(run.issued_at);
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY, "cannot start the sessions");
  }
  pthread_mutex_init(&run.lock, NULL);
  pthread_mutex_init(&run.end_lock, NULL);
  pthread_condattr_t cond_attr;
  pthread_condattr_init(&cond_attr);
  pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
  pthread_cond_init(&run.ended, &cond_attr);
  pthread_condattr_destroy(&cond_attr);
  atomic_store(&run.running, n_servers);
  long cpus = mb__cpus_allowed();
  run.spin_always = (long)n_servers * MB_MAX(c->threads, 1) + 1 <= cpus;
  spin_margin_init(&run.margin, run.spin_always);
  double steal0 = mb__steal_seconds();
  run.t0 = mb__now();
  for (; started < n_servers; started++) {
    servers[started].run = &run;
    servers[started].session = sessions[started];
    spin_margin_init(&servers[started].margin, run.spin_always);
    if (pthread_create(&servers[started].thread, NULL, serve,
                       &servers[started]) != 0) {
      mb_error e;
      mb__error(&e, MB_STATUS_INTERNAL, "cannot start session thread %d",
                started + 1);
      run_fail(&run, MB_STATUS_INTERNAL, &e);
      atomic_fetch_sub(&run.running, n_servers - started);
      break;
    }
  }
  pthread_t generator;
  bool generating = false;
  if (run.arrivals && !atomic_load(&run.stop)) {
    generating = pthread_create(&generator, NULL, generate, &run) == 0;
    if (!generating) {
      mb_error e;
      mb__error(&e, MB_STATUS_INTERNAL, "cannot start the query generator");
      run_fail(&run, MB_STATUS_INTERNAL, &e);
    }
  }
  /* Progress every LOAD_PROGRESS_INTERVAL_S until the last session ends. */
  pthread_mutex_lock(&run.end_lock);
  while (atomic_load(&run.running) > 0) {
    struct timespec ts = monotonic_at(mb__now() + LOAD_PROGRESS_INTERVAL_S);
    pthread_cond_timedwait(&run.ended, &run.end_lock, &ts);
    if (atomic_load(&run.running) == 0 || !progress || !progress->fn)
      continue;
    pthread_mutex_unlock(&run.end_lock);
    progress->fn(progress->ctx, "load", (int64_t)atomic_load(&run.done),
                 mb__now() - run.t0);
    pthread_mutex_lock(&run.end_lock);
  }
  pthread_mutex_unlock(&run.end_lock);
  for (int k = 0; k < started; k++)
    pthread_join(servers[k].thread, NULL);
  double stop_s = mb__now() - run.t0;
  double steal1 = mb__steal_seconds();
  if (generating) {
    /* Every query served or the run stopped: nothing left to issue. */
    atomic_store(&run.stop, 1);
    pthread_join(generator, NULL);
  }
  if (run.status) {
    *err = run.err;
    status = run.status;
  } else {
    status = summarise(&run, servers, n_servers, scenario, stop_s, o, err);
    o->steal_ms =
        steal0 >= 0 && steal1 >= steal0 ? (steal1 - steal0) * 1e3 : NAN;
  }
  for (int k = 0; k < n_servers; k++)
    free(servers[k].records);
  free(servers);
  free(arrivals);
  free(run.issued_at);
  pthread_mutex_destroy(&run.lock);
  pthread_mutex_destroy(&run.end_lock);
  pthread_cond_destroy(&run.ended);
  if (status)
    outcome_free(o);
  return status;
}

/* ------------------------------------------------------------------------ */
/* Warm-up, find-peak, the result                                            */
/* ------------------------------------------------------------------------ */

/* Warms every session up (as bench does: both the count and the time) and
 * returns the median run time of the first one's warm-up, in seconds. */
static mb_status warm_up(const mb_runtime *rt, void *const *sessions,
                         int n_sessions, const mb_bench_job *job,
                         const mb_progress_sink *progress, double *median_out,
                         mb_error *err) {
  const mb_bench_config *c = job->config;
  double *times = NULL;
  int64_t n_times = 0, cap = 0;
  mb_status status = MB_STATUS_OK;
  if (progress && progress->fn)
    progress->fn(progress->ctx, "warmup", 0, 0.0);
  for (int k = 0; k < n_sessions && !status; k++) {
    double start = mb__now(), now = start;
    for (int64_t i = 0; !status && (i < MB_MAX(c->warmup_iterations, 1) ||
                                    now - start < c->warmup_seconds);
         i++) {
      double before = mb__now();
      status = rt->run(
          sessions[k],
          (const mb_tensor *const *)job->samples[(i + 1) % job->n_samples],
          err);
      now = mb__now();
      if (status) {
        mb__error_prefix(err, status, "warm-up run %lld of session %d",
                         (long long)i + 1, k + 1);
        break;
      }
      if (k > 0)
        continue;
      if (n_times == cap) {
        cap = cap ? cap * 2 : 64;
        double *grown = realloc(times, sizeof *grown * (size_t)cap);
        if (!grown) {
          status = mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                             "out of memory warming up");
          break;
        }
        times = grown;
      }
      times[n_times++] = now - before;
    }
  }
  *median_out = 0;
  if (!status && n_times > 0) {
    qsort(times, (size_t)n_times, sizeof *times, compare_double);
    *median_out = mb__percentile(times, n_times, 50.0);
  }
  free(times);
  return status;
}

static mb_status add_trial(mb_load_stats *load, const run_outcome *o,
                           mb_error *err) {
  mb_load_trial *grown =
      realloc(load->trials, sizeof *grown * (size_t)(load->n_trials + 1));
  if (!grown)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "out of memory in find-peak");
  load->trials = grown;
  load->trials[load->n_trials++] =
      (mb_load_trial){o->target_qps, o->achieved_qps, o->slo_latency_ms,
                      o->valid, o->slo_met == 1};
  return MB_STATUS_OK;
}

static bool passes(const run_outcome *o) {
  return o->valid && o->slo_met == 1;
}

/* Seconds a server run at qps is expected to take. */
static double expected_run_s(const mb_load_config *lc, double qps) {
  return MB_MAX(lc->min_duration, (double)lc->min_queries / qps);
}

/* LoadGen's FindPeakPerformance: from the first guess, double while runs
 * pass (or halve while they fail) to bracket the peak, then bisect until
 * the bracket is within MB_FIND_PEAK_PRECISION. *best receives the passing
 * run at the highest QPS (the run that proves the peak); queries == 0
 * when none passed. */
static mb_status find_peak(const mb_runtime *rt, void *const *sessions,
                           int n_sessions, const mb_bench_job *job,
                           double first_qps, const mb_progress_sink *progress,
                           mb_bench_result *result, run_outcome *best,
                           mb_error *err) {
  const mb_load_config *lc = &job->config->load;
  mb_load_stats *load = &result->load;
  double lo = 0, hi = 0, qps = first_qps;
  bool stopped = false;
  mb_status status = MB_STATUS_OK;
  run_outcome lowest;
  memset(best, 0, sizeof *best);
  memset(&lowest, 0, sizeof lowest);
  for (int trial = 0; trial < FIND_PEAK_MAX_TRIALS; trial++) {
    if (lo > 0 && hi > 0 && hi - lo <= MB_FIND_PEAK_PRECISION * lo)
      break;
    if (lo == 0 && hi > 0 && qps < first_qps / (1 << FIND_PEAK_MAX_STEPS))
      break;
    if (hi == 0 && lo > 0 && qps > first_qps * (1 << FIND_PEAK_MAX_STEPS))
      break;
    /* A worker killed by its timeout loses everything: stop the search in
     * time and report what it found. */
    if (job->deadline > 0 &&
        mb__now() + 1.5 * expected_run_s(lc, qps) + 1.0 > job->deadline) {
      stopped = true;
      break;
    }
    run_outcome o;
    if ((status = run_once(rt, sessions, n_sessions, job, MB_LOAD_SERVER, qps,
                           progress, &o, err))) {
      outcome_free(&lowest);
      return mb__error_prefix(err, status, "find-peak at %.4g QPS", qps);
    }
    if ((status = add_trial(load, &o, err))) {
      outcome_free(&o);
      outcome_free(&lowest);
      return status;
    }
    mb__log(MB_LOG_INFO, "find-peak: %.4g QPS: %s, p%g %.4g ms%s%s", qps,
            passes(&o) ? "pass" : "fail", lc->slo_percentile, o.slo_latency_ms,
            o.valid ? "" : ", INVALID: ", o.valid ? "" : o.reason);
    bool unreachable = !passes(&o) && o.valid && o.queue_max == 0;
    if (passes(&o)) {
      lo = qps;
      outcome_free(best);
      *best = o;
    } else if (lo == 0) {
      /* Nothing passed yet: keep the lowest failing run to report. */
      hi = qps;
      outcome_free(&lowest);
      lowest = o;
    } else {
      hi = qps;
      outcome_free(&o);
    }
    /* No query waited and the SLO was still missed: the service time
     * alone misses it, and a lower QPS cannot help. */
    if (unreachable && lo == 0) {
      mb__result_add_warning(result,
                             "find-peak: at %.4g QPS no query waited for a "
                             "session and p%g still missed the SLO: the "
                             "service time alone misses it",
                             qps, lc->slo_percentile);
      break;
    }
    qps = lo == 0 ? hi / 2 : hi == 0 ? lo * 2 : (lo + hi) / 2;
  }
  load->peak_qps = lo;
  if (lo == 0) {
    *best = lowest; /* may be empty: the caller runs once then */
    mb__result_add_warning(result,
                           "find-peak: no run met the SLO (p%g <= %g ms), "
                           "down to %.4g QPS",
                           lc->slo_percentile, lc->slo_ms,
                           lowest.queries ? lowest.target_qps : qps);
  } else {
    outcome_free(&lowest);
  }
  if (stopped)
    mb__result_add_warning(result,
                           "find-peak stopped after %d runs: the next would "
                           "outlast --timeout (bracket %.4g..%.4g QPS)",
                           load->n_trials, lo, hi);
  else if (lo > 0 && hi == 0)
    mb__result_add_warning(result,
                           "find-peak: every run up to %.4g QPS met the SLO; "
                           "the peak is at least that",
                           lo);
  return MB_STATUS_OK;
}

/* Moves a run's figures into the result. */
static void fill_result(const mb_bench_job *job, mb_load_scenario scenario,
                        int n_sessions, run_outcome *o,
                        mb_bench_result *result) {
  mb_load_stats *load = &result->load;
  load->scenario = scenario;
  load->concurrency = n_sessions;
  load->target_qps = scenario == MB_LOAD_SERVER ? o->target_qps : 0;
  load->scheduled_qps = o->scheduled_qps;
  load->achieved_qps = o->achieved_qps;
  load->queries = o->queries;
  load->unserved = o->unserved;
  load->samples_per_query = job->batch_size;
  load->duration_s = o->duration_s;
  load->valid = o->valid;
  snprintf(load->invalid_reason, sizeof load->invalid_reason, "%s",
           o->valid ? "" : o->reason);
  load->queue_depth_mean = o->queue_mean;
  load->queue_depth_max = o->queue_max;
  load->service_ms = o->service;
  load->generator_lateness_us = o->lateness;
  load->handoff_us = o->handoff;
  load->idle_sleeps = o->idle_sleeps;
  load->spin_fallbacks = o->spin_fallbacks;
  load->spin_always = o->spin_always;
  load->spin_margin_us = o->spin_margin_us;
  load->steal_ms = o->steal_ms;
  load->ideal_p99_ms = o->ideal_p99_ms;
  load->harness_excess = o->harness_excess;
  char steal[128] = "";
  if (o->steal_ms > 0)
    snprintf(steal, sizeof steal,
             "; the hypervisor took %.0f ms of CPU time (steal) during the "
             "run, stalling the threads it hit",
             o->steal_ms);
  if (o->harness_excess)
    mb__result_add_warning(
        result,
        "server run: p99 %.4g ms exceeds the ideal queue's %.4g ms (the same "
        "arrivals and service times) by %.4g ms, more than the harness "
        "explains (generator lateness p99 %.1f us + hand-off p99 %.1f us + "
        "%g%%): the machine was busy or delays compounded in the queue%s",
        o->latency.p99, o->ideal_p99_ms, o->latency.p99 - o->ideal_p99_ms,
        o->lateness.p99, o->handoff.p99, LOAD_EXCESS_TOLERANCE * 100.0, steal);
  load->slo_latency_ms = o->slo_latency_ms;
  load->slo_met = o->slo_met;
  load->over_slo_share = o->over_slo_share;
  result->latency_ms = o->latency;
  result->iterations = o->served;
  result->n_samples_ms = o->queries;
  result->samples_ms = o->latency_ms;
  o->latency_ms = NULL;
  result->batch_size = job->batch_size;
  result->inference_seconds = o->service_sum_s;
  result->elapsed_seconds = o->duration_s;
  result->throughput_sps =
      o->duration_s > 0
          ? (double)job->batch_size * (double)o->served / o->duration_s
          : 0;
}

mb_status mb__load_measure(const mb_runtime *rt, void *const *sessions,
                           int n_sessions, const mb_bench_job *job,
                           const mb_progress_sink *progress,
                           mb_bench_result *result, mb_error *err) {
  const mb_load_config *lc = &job->config->load;
  mb_load_scenario scenario = lc->scenario;
  run_outcome o;
  mb_status status;
  memset(&o, 0, sizeof o);
  if (n_sessions < 1)
    return mb__error(err, MB_STATUS_INTERNAL, "load run without a session");

  double t0 = mb__now();
  status = rt->run(sessions[0], (const mb_tensor *const *)job->samples[0], err);
  result->first_run_ms = (mb__now() - t0) * 1e3;
  if (status)
    return mb__error_prefix(err, status, "first run");
  double service_s;
  if ((status =
           warm_up(rt, sessions, n_sessions, job, progress, &service_s, err)))
    return status;

  result->load.scenario = scenario;
  result->load.slo_met = -1;
  if (scenario == MB_LOAD_SERVER && lc->find_peak) {
    /* The first guess: what the sessions serve back to back. */
    double first = lc->qps > 0     ? lc->qps
                   : service_s > 0 ? n_sessions / service_s
                                   : 100.0;
    if ((status = find_peak(rt, sessions, n_sessions, job, first, progress,
                            result, &o, err)))
      return status;
    /* Stopped before any run (the deadline): one run at the first guess
     * so the result has figures. */
    if (o.queries == 0 &&
        (status = run_once(rt, sessions, n_sessions, job, MB_LOAD_SERVER, first,
                           progress, &o, err)))
      return status;
  } else {
    if ((status = run_once(rt, sessions, n_sessions, job, scenario, lc->qps,
                           progress, &o, err)))
      return status;
  }
  double peak = result->load.peak_qps;
  fill_result(job, scenario, n_sessions, &o, result);
  result->load.peak_qps = peak;
  outcome_free(&o);
  if (progress && progress->fn)
    progress->fn(progress->ctx, "load", result->iterations,
                 result->elapsed_seconds);
  return MB_STATUS_OK;
}
