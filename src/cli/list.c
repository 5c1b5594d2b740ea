/* modelbench list: the conversion options (or runtimes) and whether each is
 * available on this machine, and if not, why. */
#include "cli/cli_common.h"
#include "core/json_write.h"

static const char list_help[] =
    "Usage: modelbench list [--json] [--runtimes] [--tier N]\n"
    "\n"
    "Lists the conversion options 'modelbench bench -c' accepts: numeric id,\n"
    "name, runtime, device, precision, whether it is in the default set, and\n"
    "whether it is available here (or why not). Names and ids can be mixed\n"
    "in -c: 'modelbench bench model.onnx -c REFERENCE,2'.\n"
    "\n"
    "Options:\n"
    "  --runtimes  list the runtime adapters with their versions instead\n"
    "  --tier N    only the conversions of tier N ('bench --tier N'):\n"
    "              1 quick check (REFERENCE, ORT_CPU); 2 core deployment\n"
    "              options (one fp32 option per runtime plus its reduced-\n"
    "              precision one); 3 everything. Tiers include the lower\n"
    "              ones; 'bench --tier' runs only the available ones\n"
    "  --json      print JSON instead of text\n"
    "  -h, --help  show this help\n";

static int print_conversions(bool json, int tier) {
  int n = mb_conversion_count();
  mb_json j;
  mb_error err;
  if (json) {
    mb__json_init(&j, stdout, true);
    mb__json_object_begin(&j);
    mb__json_key(&j, "conversions");
    mb__json_array_begin(&j);
  }
  /* The name column fits the longest name (COMPILE_INDUCTOR_...). */
  int width = 22;
  for (int i = 0; i < n; i++) {
    mb_conversion_info info;
    if (mb_conversion_get(i, &info, &err) == MB_STATUS_OK)
      width = MB_MAX(width, (int)strlen(info.name));
  }
  if (!json)
    printf("%-4s %-*s %-12s %-11s %-8s %-9s %-7s %-4s %s\n", "ID", width,
           "NAME", "RUNTIME", "MODEL", "DEVICES", "PRECISION", "DEFAULT",
           "TIER", "AVAILABLE");
  for (int i = 0; i < n; i++) {
    mb_conversion_info info;
    if (mb_conversion_get(i, &info, &err) != MB_STATUS_OK)
      return mb__cli_fail(NULL, &err);
    if (tier > 0 && info.tier > tier)
      continue;
    if (json) {
      mb__json_object_begin(&j);
      mb__json_kv_int(&j, "id", info.id);
      mb__json_kv_string(&j, "name", info.name);
      mb__json_kv_string(&j, "runtime", info.runtime);
      mb__json_kv_string(&j, "format", mb_model_format_name(info.format));
      mb__json_kv_string(&j, "device", mb_device_name(info.device));
      mb__json_key(&j, "devices");
      mb__json_array_begin(&j);
      for (int d = 0; d < MB_DEVICE_COUNT; d++)
        if (info.devices & (1u << d)) {
          mb__json_object_begin(&j);
          mb__json_kv_string(&j, "device", mb_device_name((mb_device)d));
          mb__json_kv_bool(&j, "here", (info.devices_here >> d) & 1u);
          mb__json_object_end(&j);
        }
      mb__json_array_end(&j);
      mb__json_kv_string(&j, "devices_reason",
                         info.devices_reason[0] ? info.devices_reason : NULL);
      mb__json_kv_string(&j, "precision", mb_precision_name(info.precision));
      mb__json_kv_bool(&j, "default", info.in_default_set);
      mb__json_kv_int(&j, "tier", info.tier);
      mb__json_kv_bool(&j, "available", info.available);
      mb__json_kv_string(&j, "reason", info.reason);
      mb__json_kv_string(&j, "int8_weights",
                         info.int8_weights != MB_INT8_WEIGHTS_AUTO
                             ? mb_int8_weights_name(info.int8_weights)
                             : NULL);
      mb__json_kv_string(&j, "description", info.description);
      mb__json_object_end(&j);
    } else {
      /* A host program registers rows at run time and a reason quotes
       * dlopen's message: their control characters are escaped. */
      char name[MB_TERM_TEXT_SIZE], runtime[MB_TERM_TEXT_SIZE];
      char reason[MB_TERM_TEXT_SIZE], devices[32] = "";
      size_t used = 0;
      for (int d = 0; d < MB_DEVICE_COUNT && used < sizeof devices; d++)
        if (info.devices & (1u << d))
          used +=
              (size_t)snprintf(devices + used, sizeof devices - used, "%s%s",
                               used ? "," : "", mb_device_name((mb_device)d));
      /* An available conversion that cannot use one of its devices here
       * says why after its note. */
      char note[sizeof info.reason + sizeof info.devices_reason + 8];
      snprintf(note, sizeof note, "%s%s%s", info.reason,
               info.available && info.devices_reason[0] && info.reason[0] ? "; "
                                                                          : "",
               info.available ? info.devices_reason : "");
      printf("%-4d %-*s %-12s %-11s %-8s %-9s %-7s %-4d %s%s%s\n", info.id,
             width, mb__term_text(info.name, name, sizeof name),
             mb__term_text(info.runtime, runtime, sizeof runtime),
             mb_model_format_name(info.format), devices,
             mb_precision_name(info.precision),
             info.in_default_set ? "yes" : "no", info.tier,
             info.available ? "yes" : "no",
             note[0] ? (info.available ? ", " : ": ") : "",
             mb__term_text(note, reason, sizeof reason));
    }
  }
  if (json) {
    mb__json_array_end(&j);
    mb__json_object_end(&j); /* the writer ends the document with \n */
  }
  return MB_EXIT_OK;
}

static int print_runtimes(bool json) {
  int n = mb_runtime_count();
  mb_json j;
  mb_error err;
  if (json) {
    mb__json_init(&j, stdout, true);
    mb__json_object_begin(&j);
    mb__json_key(&j, "runtimes");
    mb__json_array_begin(&j);
  } else {
    printf("%-14s %-9s %s\n", "RUNTIME", "AVAILABLE", "VERSION / REASON");
  }
  for (int i = 0; i < n; i++) {
    mb_runtime_info info;
    if (mb_runtime_get(i, &info, &err) != MB_STATUS_OK)
      return mb__cli_fail(NULL, &err);
    if (json) {
      mb__json_object_begin(&j);
      mb__json_kv_string(&j, "name", info.name);
      mb__json_kv_bool(&j, "available", info.available);
      mb__json_kv_string(&j, "version", info.version);
      mb__json_kv_string(&j, "reason", info.reason);
      mb__json_object_end(&j);
    } else {
      char name[MB_TERM_TEXT_SIZE], why[MB_TERM_TEXT_SIZE];
      printf("%-14s %-9s %s\n", mb__term_text(info.name, name, sizeof name),
             info.available ? "yes" : "no",
             mb__term_text(info.available ? info.version : info.reason, why,
                           sizeof why));
    }
  }
  if (json) {
    mb__json_array_end(&j);
    mb__json_object_end(&j); /* the writer ends the document with \n */
  }
  return MB_EXIT_OK;
}

int mb__cli_list(int argc, char **argv) {
  static const struct option options[] = {
      {"json", no_argument, NULL, 'j'},
      {"runtimes", no_argument, NULL, 'r'},
      {"tier", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = "list";
  bool json = false, runtimes = false;
  int c, tier = 0;
  int64_t v;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'j':
      json = true;
      break;
    case 'r':
      runtimes = true;
      break;
    case 't':
      if (!mb__cli_parse_i64(optarg, 1, 3, &v))
        return mb__cli_usage_error(cmd, "--tier '%s': expected 1, 2 or 3",
                                   optarg);
      tier = (int)v;
      break;
    case 'h':
      fputs(list_help, stdout);
      return MB_EXIT_OK;
    default:
      return mb__cli_bad_option(cmd, c, argv);
    }
  }
  if (optind < argc)
    return mb__cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  return runtimes ? print_runtimes(json) : print_conversions(json, tier);
}
