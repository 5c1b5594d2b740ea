/* modelbench jobs: follow and finish runs spread over other machines
 * (`bench --executor slurm --no-wait`), from any shell.
 *
 *   jobs status RUN    asks the executor once (resubmitting failed tasks
 *                      that have retries left) and lists the tasks
 *   jobs collect RUN   waits for the tasks, merges them and shows the
 *                      reports exactly as `bench` would have: table,
 *                      report files, results database, exit code
 *
 * RUN is the run id bench printed (a folder under <cache dir>/runs) or a
 * run folder. */
#include "cli/exec_cli.h"
#include "exec/exec.h"

static const char jobs_help[] =
    "Usage: modelbench jobs status RUN [--cache-dir DIR]\n"
    "       modelbench jobs collect RUN [--cache-dir DIR]\n"
    "\n"
    "Follows a bench run on other machines (bench --executor slurm\n"
    "--no-wait prints its id). RUN: the run id, or its run folder.\n"
    "\n"
    "  status    the tasks: pending, running, done or failed (with Slurm's\n"
    "            state and reason); resubmits failed tasks that have\n"
    "            --retries left\n"
    "  collect   waits for the tasks, merges their results and shows them\n"
    "            like bench: table, --json/--csv/--markdown/--html files\n"
    "            given to bench, the results database (once per run)\n"
    "\n"
    "      --cache-dir DIR        where run ids are looked up (runs/ in it;\n"
    "                             default $MODELBENCH_CACHE_DIR or\n"
    "                             ~/.cache/modelbench)\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Exit status: status: 0, 1 when the run cannot be read; collect: as\n"
    "bench (0 every conversion ran, 1 a conversion or task failed); 2\n"
    "usage error.\n";

enum { OPT_CACHE_DIR = 256 };

static const struct option options[] = {
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char *const cmd = "jobs";

static int jobs_status(mb_exec_run *run) {
  mb_error err;
  if (!run->collected && !mb__exec_finished(run) && mb__exec_poll(run, &err))
    mb__cli_error(NULL, "warning: %s (the states below are the last known)",
                  err.message);
  mb__exec_print_status(run, stdout);
  return MB_EXIT_OK;
}

/* One row per subcommand. */
static const struct {
  const char *name;
  int (*fn)(mb_exec_run *run);
} subcommands[] = {
    {"status", jobs_status},
    {"collect", mb__cli_exec_finish},
};

int mb__cli_jobs(int argc, char **argv) {
  const char *cache_dir = NULL;
  int c;
  opterr = 0;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    if (c == 'h') {
      fputs(jobs_help, stdout);
      return MB_EXIT_OK;
    }
    if (c == OPT_CACHE_DIR)
      cache_dir = optarg;
    else
      return mb__cli_bad_option(cmd, c, argv);
  }
  if (argc - optind != 2)
    return mb__cli_usage_error(cmd, argc - optind < 2
                                        ? "expected a subcommand and RUN"
                                        : "expected one RUN");
  const char *sub = argv[optind], *run_name = argv[optind + 1];
  for (size_t i = 0; i < MB_ARRAY_COUNT(subcommands); i++) {
    if (strcmp(sub, subcommands[i].name) != 0)
      continue;
    mb_exec_run run;
    mb_error err;
    if (mb__exec_run_load(run_name, cache_dir, &run, &err))
      return mb__cli_fail(NULL, &err);
    int rc = subcommands[i].fn(&run);
    mb__exec_run_free(&run);
    return rc;
  }
  return mb__cli_usage_error(cmd,
                             "unknown subcommand '%s': expected status "
                             "or collect",
                             sub);
}
