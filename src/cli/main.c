/* modelbench command-line tool: dispatches to one function per command.
 * Adding a command means one file under src/cli/ and one row below.
 *
 * The CLI lives in the library (mb_cli_main) so that a host program with
 * host runtimes (the Python front's `python3 -m modelbench`) runs every
 * command with its conversions; src/main.c is the executable's main(). */
#include "cli/cli_common.h"

static int cli_version(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("modelbench %s\n", MB_VERSION_STRING);
  return MB_EXIT_OK;
}

static const mb_cli_command commands[] = {
    {"analyze", "show a model's inputs, operators, parameters and FLOPs",
     mb__cli_analyze},
    {"run", "run a model on the reference interpreter", mb__cli_run},
    {"check", "compare a model's outputs with an ONNX test data set",
     mb__cli_check},
    {"list-ops", "list the operators the reference interpreter implements",
     mb__cli_list_ops},
    {"bench", "benchmark a model under conversion options", mb__cli_bench},
    {"load", "serve queries under a load scenario (server QPS within an SLO)",
     mb__cli_load},
    {"list", "list the conversion options and whether each is available",
     mb__cli_list},
    {"profile", "time one conversion per segment and per node",
     mb__cli_profile},
    {"explain", "compare two conversions' profiles: where the time goes",
     mb__cli_explain},
    {"history", "list the benchmark runs recorded in the results database",
     mb__cli_history},
    {"compare", "compare two runs: per-conversion change and significance",
     mb__cli_compare},
    {"cache", "list, inspect, report on and clean the build cache",
     mb__cli_cache},
    {"convert", "write the model a conversion produces (FP16, INT8, ...)",
     mb__cli_convert},
    {"tune", "find the fastest configuration within an accuracy budget",
     mb__cli_tune},
    {"jobs", "follow and collect bench runs on Slurm or other machines",
     mb__cli_jobs},
    {"script", "find the models a Python script runs and benchmark them",
     mb__cli_script},
    {"machine", "measure this machine's peaks: GEMM per precision, bandwidth",
     mb__cli_machine},
    {"version", "print modelbench's version", cli_version},
};

/* Other tools' words for our commands (MLAgility's benchit, trtexec,
 * benchmark_app): an unknown command that is one of them is answered
 * with ours. */
static const struct {
  const char *theirs, *ours;
} spellings[] = {
    {"benchmark", "bench"},
    {"benchit", "script"},
    {"report", "cache report"},
};

static void usage(FILE *out) {
  fprintf(out, "Usage: modelbench [--version] [--help] COMMAND [ARGS...]\n"
               "\n"
               "Commands:\n");
  for (size_t i = 0; i < MB_ARRAY_COUNT(commands); i++)
    fprintf(out, "  %-10s  %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\n"
               "Run 'modelbench COMMAND --help' for a command's options.\n"
               "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

int mb_cli_main(int argc, char **argv) {
  /* getopt keeps state between calls: a host may run several commands. */
  optind = 0;
  if (argc < 2) {
    usage(stderr);
    return MB_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
      strcmp(name, "help") == 0) {
    usage(stdout);
    return MB_EXIT_OK;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
    printf("modelbench %s\n", MB_VERSION_STRING);
    return MB_EXIT_OK;
  }
  for (size_t i = 0; i < MB_ARRAY_COUNT(commands); i++)
    if (strcmp(name, commands[i].name) == 0) {
      int rc = commands[i].fn(argc - 1, argv + 1);
      fflush(stdout);
      fflush(stderr);
      return rc;
    }
  for (size_t i = 0; i < MB_ARRAY_COUNT(spellings); i++)
    if (strcmp(name, spellings[i].theirs) == 0) {
      fprintf(stderr,
              "modelbench: unknown command '%s': did you mean 'modelbench "
              "%s'?\n",
              name, spellings[i].ours);
      return MB_EXIT_USAGE;
    }
  if (name[0] == '-')
    fprintf(stderr,
            "modelbench: unknown option '%s' (see 'modelbench "
            "--help')\n",
            name);
  else
    fprintf(stderr,
            "modelbench: unknown command '%s' (see 'modelbench "
            "--help')\n",
            name);
  return MB_EXIT_USAGE;
}
