/* Shared by the ONNX reader, writer and TensorProto file I/O: conversion
 * between TensorProto and mb_tensor, and external data files. Only files
 * under src/onnx/ include this (and with it the generated protobuf-c
 * header); everything above works on the IR of core/ir.h. */
#ifndef MB_ONNX_INTERNAL_H
#define MB_ONNX_INTERNAL_H

#include "core/ir.h"

#include "onnx.pb-c.h"

/* ONNX stores raw_data little-endian; the conversions below copy it with
 * memcpy, which is only right on little-endian hosts. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "modelbench's ONNX I/O assumes a little-endian host"
#endif

/* Subgraphs (If/Loop/Scan bodies) nested deeper than this are rejected, so
 * a hostile file cannot exhaust the stack through our recursion. */
#define MB_ONNX_MAX_GRAPH_DEPTH 64

/* Messages that can nest without bound (graphs in attributes, types in
 * sequence types) may be at most this deep in a model file; protobuf-c
 * recurses once per level and has no limit of its own. */
#define MB_ONNX_MAX_NESTING (3 * MB_ONNX_MAX_GRAPH_DEPTH + 64)

/* Reads one protobuf varint at *p, advancing it; false when malformed. */
bool mb__pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* One external data file, opened and mapped on first reference. */
typedef struct mb_external_file {
  char *location; /* as written in the model, normalised (no "./") */
  char *path;     /* base_dir + "/" + location */
  const unsigned char *map;
  size_t size;
} mb_external_file;

/* External data files referenced while converting one model (or one
 * TensorProto file). Zero-initialise, set the borrowed fields, and release
 * with mb__external_data_close. */
typedef struct mb_external_data {
  const char *base_dir; /* borrowed; NULL: external data is an error */
  mb_sha256 *hash;      /* borrowed or NULL; each file is hashed (whole) when
                           first referenced, in reference order */
  int n_files, cap_files;
  mb_external_file *files;
} mb_external_data;

void mb__external_data_close(mb_external_data *ext);

/* True when `location` is a relative path without ".." components: external
 * data must stay inside the model's folder. */
bool mb__external_location_ok(const char *location);

/* Converts a TensorProto to a new dense tensor (named tp->name). label names
 * the tensor in messages, e.g. "initializer 'W'". ext may be NULL (external
 * data is then an error). Fails with MB_STATUS_UNSUPPORTED for string and
 * unknown element types, MB_STATUS_PARSE when the data does not match the
 * dims, MB_STATUS_OVERFLOW for absurd sizes and MB_STATUS_IO for unreadable
 * external data. *tensor_out: release with mb_tensor_free. */
mb_status mb__tensor_from_proto(const Onnx__TensorProto *tp, const char *label,
                                mb_external_data *ext, mb_tensor **tensor_out,
                                mb_error *err);

/* Fills an initialised TensorProto that borrows from `t`: dims, data_type,
 * name (may be NULL) and raw_data all point into `t`, which must outlive
 * the proto. Fails with MB_STATUS_UNSUPPORTED for types without a fixed
 * element size. */
mb_status mb__tensor_to_proto(const mb_tensor *t, const char *name,
                              Onnx__TensorProto *tp, mb_error *err);

/* Directory part of a path: "dir/model.onnx" -> "dir", "model.onnx" -> ".".
 * Returns a malloc'd string or NULL on OOM. */
char *mb__path_dirname(const char *path);

#endif /* MB_ONNX_INTERNAL_H */
