/* Build cache: the names of rebuild policies, build statuses and stale
 * kinds; build keys (their parts, hash, machine and input signatures). */
#include "cache/internal.h"

/* ---- names ---- */

static const char *const policy_names[] = {
#define MB_X(name, str) str,
    MB_REBUILD_POLICY_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(policy_names) == MB_REBUILD_POLICY_COUNT,
               "one name per policy");

static const char *const status_names[] = {
#define MB_X(name, str) str,
    MB_BUILD_STATUS_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(status_names) == MB_BUILD_STATUS_COUNT,
               "one name per build status");

static const char *const stale_names[] = {
#define MB_X(name, str) str,
    MB_BUILD_STALE_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(stale_names) == MB_BUILD_STALE_COUNT,
               "one name per stale kind");

const key_part_def mb__bc_key_parts[] = {
#define MB_X(field, key, label) {offsetof(mb_build_key, field), key, label},
    MB_BUILD_KEY_PART_LIST(MB_X)
#undef MB_X
};
_Static_assert(MB_ARRAY_COUNT(mb__bc_key_parts) == MB_BUILD_KEY_PART_COUNT,
               "one row per key part");

const char *mb__rebuild_policy_name(mb_rebuild_policy policy) {
  return (unsigned)policy < MB_REBUILD_POLICY_COUNT ? policy_names[policy]
                                                    : "?";
}

bool mb__rebuild_policy_from_name(const char *name, mb_rebuild_policy *out) {
  for (int i = 0; name && i < MB_REBUILD_POLICY_COUNT; i++)
    if (strcmp(name, policy_names[i]) == 0) {
      *out = (mb_rebuild_policy)i;
      return true;
    }
  return false;
}

const char *mb__build_status_name(mb_build_status status) {
  return (unsigned)status < MB_BUILD_STATUS_COUNT ? status_names[status] : "?";
}

bool mb__bc_status_from_name(const char *name, mb_build_status *out) {
  for (int i = 0; name && i < MB_BUILD_STATUS_COUNT; i++)
    if (strcmp(name, status_names[i]) == 0) {
      *out = (mb_build_status)i;
      return true;
    }
  return false;
}

const char *mb__build_stale_name(mb_build_stale stale) {
  return (unsigned)stale < MB_BUILD_STALE_COUNT ? stale_names[stale] : "?";
}

/* ---- keys ---- */

const char *mb__build_key_get(const mb_build_key *key, mb_build_key_part part) {
  if (!key || (unsigned)part >= MB_BUILD_KEY_PART_COUNT)
    return NULL;
  const char *const *field =
      (const char *const *)(const void *)((const char *)key +
                                          mb__bc_key_parts[part].offset);
  return *field;
}

void mb__bc_key_set(mb_build_key *key, mb_build_key_part part,
                    const char *value) {
  const char **field =
      (const char **)(void *)((char *)key + mb__bc_key_parts[part].offset);
  *field = value;
}

const char *mb__build_key_part_json(mb_build_key_part part) {
  return (unsigned)part < MB_BUILD_KEY_PART_COUNT ? mb__bc_key_parts[part].json
                                                  : "?";
}

const char *mb__build_key_part_label(mb_build_key_part part) {
  return (unsigned)part < MB_BUILD_KEY_PART_COUNT ? mb__bc_key_parts[part].label
                                                  : "?";
}

/* A part as hashed and compared: NULL is "", except the tool version,
 * which defaults to this build's. */
const char *mb__bc_key_value(const mb_build_key *key, mb_build_key_part part) {
  const char *v = mb__build_key_get(key, part);
  if (!v && part == MB_BUILD_KEY_tool_version)
    return MB_VERSION_STRING;
  return v ? v : "";
}

void mb__build_key_hash(const mb_build_key *key, char hex[65]) {
  static const char tag[] = "modelbench build key 1\n";
  mb_sha256 sha;
  uint8_t digest[32];
  mb__sha256_init(&sha);
  mb__sha256_update(&sha, tag, sizeof tag - 1);
  for (int i = 0; i < MB_BUILD_KEY_PART_COUNT; i++) {
    const char *v = mb__bc_key_value(key, (mb_build_key_part)i);
    char head[96];
    int n = snprintf(head, sizeof head, "%s=%zu:", mb__bc_key_parts[i].json,
                     strlen(v));
    mb__sha256_update(&sha, head, (size_t)n);
    mb__sha256_update(&sha, v, strlen(v));
    mb__sha256_update(&sha, "\n", 1);
  }
  mb__sha256_final(&sha, digest);
  mb__sha256_hex(digest, hex);
}

const char *mb__build_machine_string(const mb_machine_info *machine, char *buf,
                                     size_t size) {
  if (size == 0)
    return buf;
  snprintf(buf, size, "%s; %s",
           machine && machine->cpu_model[0] ? machine->cpu_model
                                            : "unknown cpu",
           machine && machine->isa_flags[0] ? machine->isa_flags : "-");
  return buf;
}

mb_status mb__build_input_signature(int n, const mb_input_shape *shapes,
                                    const mb_dtype *dtypes, char **text_out,
                                    mb_error *err) {
  size_t size = 1;
  for (int i = 0; i < n; i++)
    size += strlen(shapes[i].name ? shapes[i].name : "") + 24 +
            21 * MB_MAX_RANK + 2;
  char *text = malloc(size);
  if (!text)
    return mb__error(err, MB_STATUS_OUT_OF_MEMORY,
                     "build cache: out of memory for the input signature");
  size_t used = 0;
  text[0] = '\0';
  for (int i = 0; i < n; i++) {
    char shape[24 + 21 * MB_MAX_RANK];
    mb__shape_str(shapes[i].rank, shapes[i].dims, shape, sizeof shape);
    int w = snprintf(text + used, size - used, "%s%s:%s%s", i ? ";" : "",
                     shapes[i].name ? shapes[i].name : "",
                     dtypes ? mb_dtype_name(dtypes[i]) : "?", shape);
    if (w > 0)
      used = MB_MIN(size - 1, used + (size_t)w);
  }
  *text_out = text;
  return MB_STATUS_OK;
}
