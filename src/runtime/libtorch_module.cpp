// The libtorch modules behind the C ABI of libtorch_module.h, one source
// built twice: libmodelbench-libtorch.so against Debian's libtorch (1.13)
// and libmodelbench-aoti.so against the libtorch in the project's PyTorch
// 2.x wheel, which also runs AOTInductor packages. The libtorch adapter
// (libtorch.c) dlopens them; nothing else in modelbench links libtorch.
//
// A TorchScript file runs the way a C++ deployment runs it: torch::jit::load
// on the CPU, eval(), forward() under torch::InferenceMode with the inputs
// wrapped (not copied) as tensors, at::set_num_threads(threads) and one
// inter-op thread. An AOTInductor package runs as its C++ loader runs it:
// torch::inductor::AOTIModelPackageLoader, run() under InferenceMode, the
// same threads. No C++ exception leaves this file: every entry point turns
// one into a status and a one-line message.
//
// On CUDA (load's `cuda` >= 0; MB_TORCH_CUDA, which CMake defines when the
// wheel's libtorch has CUDA and the CUDA runtime's headers are found): the
// TorchScript module is loaded onto the device (map_location), a package
// runs on the device it was compiled for. Each sample's inputs are copied
// to the device once (by their address: the engine passes a sample at the
// same address every time) and kept there; each call is between two CUDA
// events on the current stream and ends with torch::cuda::synchronize, so
// it returns when the device is done; outputs stay on the device until
// outputs() copies them to the CPU. The events are the CUDA runtime's own
// (cuda_runtime_api.h), device name and compute capability from
// cudaGetDeviceProperties, the peak memory from PyTorch's caching
// allocator (torch.cuda.max_memory_allocated's figure).
#include "runtime/libtorch_module.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>

#ifdef MB_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

// AOTInductor's package loader came with libtorch 2.6.
#if TORCH_VERSION_MAJOR > 2 ||                                                 \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define MB_HAVE_AOTI 1
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

// ---- errors ----

// The full text of this thread's last failure, for take_error_detail.
thread_local std::string last_detail;

mb_status fail(mb_error *err, mb_status status, const std::string &message,
               const std::string &detail = std::string()) {
  last_detail = detail;
  if (err) {
    err->status = status;
    std::snprintf(err->message, sizeof err->message, "%s", message.c_str());
    // One line: the rest of a multi-line text is the detail.
    err->message[std::strcspn(err->message, "\r\n")] = '\0';
  }
  return status;
}

// The line of a libtorch message that says what went wrong. TorchScript's
// interpreter errors start with "The following operation failed in the
// TorchScript interpreter." and a traceback, and end with the error itself
// ("RuntimeError: ..."); other messages say it on their first line.
std::string summary(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(start, end - start);
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos)
      lines.push_back(line.substr(first));
    start = end + 1;
  }
  if (lines.empty())
    return "unknown error";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (it->find("Error: ") != std::string::npos &&
        it->find(' ') > it->find("Error: "))
      return *it;
  return lines.front();
}

// Runs body, turning any exception into a status with `what` in front of
// libtorch's message.
template <class Body>
mb_status guarded(mb_error *err, const std::string &what, Body &&body) {
  try {
    return body();
  } catch (const c10::Error &e) {
    std::string text = e.what_without_backtrace();
    return fail(err, MB_STATUS_INVALID_ARGUMENT, what + ": " + summary(text),
                text);
  } catch (const std::bad_alloc &) {
    return fail(err, MB_STATUS_OUT_OF_MEMORY, what + ": out of memory");
  } catch (const std::exception &e) {
    std::string text = e.what();
    return fail(err, MB_STATUS_INTERNAL, what + ": " + summary(text), text);
  } catch (...) {
    return fail(err, MB_STATUS_INTERNAL, what + ": unknown C++ exception");
  }
}

// ---- dtypes ----

// modelbench's dtypes and libtorch's. Rows not `shared` are inputs copied
// into a wider type: libtorch 1.13 has no unsigned 16/32-bit integers.
struct dtype_row {
  mb_dtype dtype;
  c10::ScalarType torch;
  bool shared; // the input's memory is used as is
};
const dtype_row dtype_table[] = {
    {MB_DTYPE_FLOAT, c10::ScalarType::Float, true},
    {MB_DTYPE_DOUBLE, c10::ScalarType::Double, true},
    {MB_DTYPE_FLOAT16, c10::ScalarType::Half, true},
    {MB_DTYPE_BFLOAT16, c10::ScalarType::BFloat16, true},
    {MB_DTYPE_UINT8, c10::ScalarType::Byte, true},
    {MB_DTYPE_INT8, c10::ScalarType::Char, true},
    {MB_DTYPE_INT16, c10::ScalarType::Short, true},
    {MB_DTYPE_INT32, c10::ScalarType::Int, true},
    {MB_DTYPE_INT64, c10::ScalarType::Long, true},
    {MB_DTYPE_BOOL, c10::ScalarType::Bool, true},
    {MB_DTYPE_COMPLEX64, c10::ScalarType::ComplexFloat, true},
    {MB_DTYPE_COMPLEX128, c10::ScalarType::ComplexDouble, true},
    {MB_DTYPE_UINT16, c10::ScalarType::Int, false},
    {MB_DTYPE_UINT32, c10::ScalarType::Long, false},
};

const dtype_row *row_of(mb_dtype dtype) {
  for (const dtype_row &row : dtype_table)
    if (row.dtype == dtype)
      return &row;
  return nullptr;
}

bool mb_dtype_of(c10::ScalarType type, mb_dtype *out) {
  for (const dtype_row &row : dtype_table)
    if (row.shared && row.torch == type) {
      *out = row.dtype;
      return true;
    }
  return false;
}

const char *dtype_name(mb_dtype dtype) {
  static const char *const names[] = {
#define MB_X(name, id, size, str) str,
      MB_DTYPE_LIST(MB_X)
#undef MB_X
  };
  return (unsigned)dtype < sizeof names / sizeof names[0] ? names[dtype]
                                                          : "invalid";
}

// ---- sessions ----

// The tensor wrapping one input, reused while the caller passes the same
// buffer with the same dtype and shape.
struct bound_input {
  const void *data = nullptr;
  mb_dtype dtype = MB_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;
};

// One sample's input on the device, copied once (CUDA sessions).
struct device_input {
  mb_dtype dtype = MB_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;
  at::Tensor tensor;
};

#ifdef MB_TORCH_CUDA
// Two timing events on a device (CUDA sessions), destroyed with it.
struct cuda_clock {
  cudaEvent_t start = nullptr, end = nullptr;
  bool timed = false; // a run recorded both
  ~cuda_clock() {
    if (start)
      cudaEventDestroy(start);
    if (end)
      cudaEventDestroy(end);
  }
};
#endif

struct session {
  std::string path;
  torch::jit::Module module;
#ifdef MB_HAVE_AOTI
  // An AOTInductor package's loader (load_package), else null: forward()
  // is then the TorchScript module's.
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> package;
  std::vector<at::Tensor> package_args;
#endif
  std::vector<std::string> arg_names;
  std::vector<c10::IValue> inputs;
  std::vector<bound_input> bound;
  // CUDA: the device index (-1: the CPU), each input's samples on the
  // device by their host address, the events of the last call.
  int cuda = -1;
  std::vector<std::map<const void *, device_input>> on_device;
#ifdef MB_TORCH_CUDA
  std::unique_ptr<cuda_clock> clock;
#endif
  c10::IValue result;
  bool has_result = false;
  // The flattened, converted outputs of `result` (outputs()).
  bool outputs_ready = false;
  std::vector<at::Tensor> out_tensors;
  std::vector<std::string> out_names;
  std::vector<mb_libtorch_tensor> out_views;
};

// What the timed call is: a TorchScript module's forward() or a package's
// run().
std::string entry_point(const session &s) {
#ifdef MB_HAVE_AOTI
  if (s.package)
    return "the package's run()";
#endif
  (void)s;
  return "forward()";
}

std::string not_tensors(const session &s, const std::string &bad) {
  return s.path + ": " + entry_point(s) +
         " returns something other than tensors: " + bad +
         " (modelbench takes a tensor or a tuple, list or dict of them)";
}

std::string signature(const session &s) {
  std::string sig = "forward(";
  for (size_t i = 0; i < s.arg_names.size(); i++)
    sig += (i ? ", " : "") + s.arg_names[i];
  return sig + ")";
}

// Whether forward()'s declared result holds only tensors (in tuples,
// lists and dicts); *bad names the first part that does not.
bool returns_tensors(const c10::TypePtr &type, const std::string &where,
                     std::string *bad) {
  switch (type->kind()) {
  case c10::TypeKind::TensorType:
    return true;
  case c10::TypeKind::TupleType: {
    const auto &items = type->containedTypes();
    for (size_t i = 0; i < items.size(); i++)
      if (!returns_tensors(items[i], where + "[" + std::to_string(i) + "]",
                           bad))
        return false;
    return true;
  }
  case c10::TypeKind::ListType:
    return returns_tensors(type->containedType(0), where + "[i]", bad);
  case c10::TypeKind::DictType:
    return returns_tensors(type->containedType(1), where + "[key]", bad);
  default:
    *bad = where + " is " + type->annotation_str();
    return false;
  }
}

// forward() must accept n_inputs tensors in order and return tensors.
mb_status check_signature(session &s, int n_inputs, mb_error *err) {
  auto method = s.module.find_method("forward");
  if (!method)
    return fail(err, MB_STATUS_UNSUPPORTED,
                s.path + ": the TorchScript module has no forward() method");
  const c10::FunctionSchema &schema = method->function().getSchema();
  const auto &args = schema.arguments();
  size_t required = 0, total = 0;
  for (size_t i = 1; i < args.size(); i++) { // args[0] is self
    s.arg_names.push_back(args[i].name());
    total++;
    if (!args[i].default_value())
      required = total;
  }
  if ((size_t)n_inputs < required || (size_t)n_inputs > total) {
    std::string want = required == total ? std::to_string(total)
                                         : std::to_string(required) + " to " +
                                               std::to_string(total);
    return fail(err, MB_STATUS_SHAPE,
                s.path + ": " + signature(s) + " takes " + want +
                    " tensors but " + std::to_string(n_inputs) + " input" +
                    (n_inputs == 1 ? " is" : "s are") +
                    " given (one --shape NAME=D0,D1,... per argument, "
                    "in order)");
  }
  for (int i = 0; i < n_inputs; i++) {
    const c10::TypePtr &type = args[(size_t)i + 1].type();
    if (!c10::TensorType::get()->isSubtypeOf(*type))
      return fail(err, MB_STATUS_UNSUPPORTED,
                  s.path + ": argument '" + s.arg_names[(size_t)i] + "' of " +
                      signature(s) + " is " + type->annotation_str() +
                      "; modelbench passes tensors");
  }
  std::string bad;
  if (schema.returns().size() != 1 ||
      !returns_tensors(schema.returns()[0].type(), "the result", &bad))
    return fail(err, MB_STATUS_UNSUPPORTED, not_tensors(s, bad));
  return MB_STATUS_OK;
}

// Input i on the CPU: the caller's memory when libtorch has its dtype,
// else a widened copy.
mb_status host_tensor(int i, const mb_libtorch_tensor &in, at::Tensor *out,
                      mb_error *err) {
  std::vector<int64_t> dims(in.dims, in.dims + in.rank);
  const dtype_row *row = row_of(in.dtype);
  // (Appended, not "#" + ...: GCC 12 at -O3 warns about that falsely.)
  std::string name = in.name ? in.name : "#";
  if (!in.name)
    name += std::to_string(i);
  if (!row)
    return fail(err, MB_STATUS_UNSUPPORTED,
                "input '" + name + "' is " + dtype_name(in.dtype) +
                    ", which libtorch has no type for");
  at::Tensor t;
  if (row->shared) {
    t = torch::from_blob(in.data, dims,
                         torch::TensorOptions().dtype(row->torch));
  } else if (in.dtype == MB_DTYPE_UINT16) {
    t = torch::empty(dims, torch::TensorOptions().dtype(at::kInt));
    const uint16_t *src = static_cast<const uint16_t *>(in.data);
    int32_t *dst = t.data_ptr<int32_t>();
    for (int64_t k = 0; k < t.numel(); k++)
      dst[k] = src[k];
  } else {
    t = torch::empty(dims, torch::TensorOptions().dtype(at::kLong));
    const uint32_t *src = static_cast<const uint32_t *>(in.data);
    int64_t *dst = t.data_ptr<int64_t>();
    for (int64_t k = 0; k < t.numel(); k++)
      dst[k] = src[k];
  }
  *out = t;
  return MB_STATUS_OK;
}

// Wraps input i for forward(): host_tensor on the CPU; on CUDA the
// sample's copy on the device, made on its first run.
mb_status bind_input(session &s, int i, const mb_libtorch_tensor &in,
                     mb_error *err) {
  bound_input &b = s.bound[(size_t)i];
  std::vector<int64_t> dims(in.dims, in.dims + in.rank);
  const dtype_row *row = row_of(in.dtype);
  if (b.data == in.data && b.dtype == in.dtype && b.dims == dims && row &&
      (row->shared || s.cuda >= 0))
    return MB_STATUS_OK;
  at::Tensor t;
  if (s.cuda >= 0) {
    auto &samples = s.on_device[(size_t)i];
    auto it = samples.find(in.data);
    if (it != samples.end() && it->second.dtype == in.dtype &&
        it->second.dims == dims) {
      t = it->second.tensor;
    } else {
      if (mb_status status = host_tensor(i, in, &t, err))
        return status;
      t = t.to(c10::Device(c10::kCUDA, (c10::DeviceIndex)s.cuda));
      samples[in.data] = device_input{in.dtype, dims, t};
    }
  } else if (mb_status status = host_tensor(i, in, &t, err)) {
    return status;
  }
  s.inputs[(size_t)i] = t;
  b.data = in.data;
  b.dtype = in.dtype;
  b.dims = std::move(dims);
  return MB_STATUS_OK;
}

// Appends the tensors of v in order (tuples, lists and dicts flattened;
// dict values named after their string keys). Returns false with *bad
// describing the first value that is not a tensor.
bool flatten(const c10::IValue &v, const std::string &where,
             const std::string &name, session &s, std::string *bad) {
  if (v.isTensor()) {
    s.out_tensors.push_back(v.toTensor());
    s.out_names.push_back(name);
    return true;
  }
  if (v.isTuple()) {
    const auto &items = v.toTupleRef().elements();
    for (size_t i = 0; i < items.size(); i++)
      if (!flatten(items[i], where + "[" + std::to_string(i) + "]", name, s,
                   bad))
        return false;
    return true;
  }
  if (v.isList()) {
    c10::List<c10::IValue> items = v.toList();
    for (size_t i = 0; i < items.size(); i++)
      if (!flatten(items.get(i), where + "[" + std::to_string(i) + "]", name, s,
                   bad))
        return false;
    return true;
  }
  if (v.isGenericDict()) {
    for (const auto &entry : v.toGenericDict()) {
      const c10::IValue &key = entry.key();
      std::string k = key.isString() ? key.toStringRef() : key.tagKind();
      std::string child = name.empty() ? k : name + "." + k;
      if (!flatten(entry.value(), where + "['" + k + "']", child, s, bad))
        return false;
    }
    return true;
  }
  *bad = where + " is " + (v.isNone() ? std::string("None") : v.tagKind());
  return false;
}

// The tensors of v in order, as flatten finds them (no checks).
[[maybe_unused]] void collect(const c10::IValue &v,
                              std::vector<at::Tensor> &out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto &item : v.toTupleRef().elements())
      collect(item, out);
  } else if (v.isList()) {
    c10::List<c10::IValue> items = v.toList();
    for (size_t i = 0; i < items.size(); i++)
      collect(items.get(i), out);
  } else if (v.isGenericDict()) {
    for (const auto &entry : v.toGenericDict())
      collect(entry.value(), out);
  }
}

// A flattened output as modelbench stores it: dense, contiguous, float32
// for reduced floats and quantized tensors.
mb_status convert_output(session &s, size_t i, mb_error *err) {
  at::Tensor t = s.out_tensors[i];
  std::string label = "output " + std::to_string(i);
  if (!s.out_names[i].empty())
    label += " ('" + s.out_names[i] + "')";
  if (t.is_quantized())
    t = t.dequantize();
  if (t.layout() != c10::kStrided)
    t = t.to_dense();
  if (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16)
    t = t.to(at::kFloat);
  if (!t.device().is_cpu())
    t = t.cpu();
  t = t.contiguous();
  mb_libtorch_tensor view{};
  if (!mb_dtype_of(t.scalar_type(), &view.dtype))
    return fail(err, MB_STATUS_UNSUPPORTED,
                s.path + ": " + label + " of " + entry_point(s) + " is " +
                    std::string(c10::toString(t.scalar_type())) +
                    ", which modelbench has no type for");
  if (t.dim() > MB_MAX_RANK)
    return fail(err, MB_STATUS_UNSUPPORTED,
                s.path + ": " + label + " of " + entry_point(s) + " has " +
                    std::to_string(t.dim()) + " dimensions; at most " +
                    std::to_string(MB_MAX_RANK) + " are supported");
  view.rank = (int)t.dim();
  for (int d = 0; d < view.rank; d++)
    view.dims[d] = t.size(d);
  view.data = t.data_ptr();
  view.nbytes = t.nbytes();
  s.out_tensors[i] = t;
  s.out_views.push_back(view);
  return MB_STATUS_OK;
}

// ---- the ABI ----

// Process-wide settings, as a deployment makes them at start-up. The
// inter-op pool can be sized only once, before it starts.
void set_threads(int threads) {
  static std::once_flag interop_once;
  std::call_once(interop_once, [] {
    try {
      at::set_num_interop_threads(1);
    } catch (const c10::Error &) {
      // Already started by the embedding program: keep its setting.
    }
  });
  at::set_num_threads(threads > 0 ? threads : 1);
}

// MB_STATUS_OK when `file` can be opened for reading.
mb_status readable(const std::string &file, mb_error *err) {
  std::FILE *f = std::fopen(file.c_str(), "rb");
  if (!f)
    return fail(err, MB_STATUS_IO, file + ": " + std::strerror(errno));
  std::fclose(f);
  return MB_STATUS_OK;
}

// Opens a session on `path` as both loaders do: the process's threads
// set, the file checked, open(session) loading it (a c10::Error there: the
// file is not `what` this libtorch can load), then check(session) and the
// input slots sized.
// MB_STATUS_OK when CUDA device `cuda` can be used: this module was built
// with CUDA and libtorch sees the device. Initialises CUDA (in the
// worker, never in the engine's parent).
mb_status cuda_usable(int cuda, mb_error *err) {
#ifdef MB_TORCH_CUDA
  if (!torch::cuda::is_available())
    return fail(err, MB_STATUS_UNAVAILABLE,
                "no CUDA device: torch::cuda::is_available() is false "
                "(libtorch " TORCH_VERSION ")");
  if (cuda >= (int)torch::cuda::device_count())
    return fail(err, MB_STATUS_UNAVAILABLE,
                "CUDA device " + std::to_string(cuda) + " asked for but " +
                    std::to_string((int)torch::cuda::device_count()) +
                    " are there");
  return MB_STATUS_OK;
#else
  (void)cuda;
  return fail(err, MB_STATUS_UNAVAILABLE,
              std::string(torch::cuda::is_available()
                              ? "this module"
                              : "this libtorch (" TORCH_VERSION ")") +
                  " is built without CUDA" +
                  (torch::cuda::is_available()
                       ? ": rebuild libmodelbench-aoti.so with the CUDA "
                         "runtime's headers (-DMB_CUDA_INCLUDE_DIR)"
                       : ""));
#endif
}

template <class Open, class Check>
mb_status open_session(const char *path, int threads, int n_inputs, int cuda,
                       const char *what, void **session_out, mb_error *err,
                       Open &&open, Check &&check) {
  *session_out = nullptr;
  std::string file = path ? path : "";
  return guarded(err, file, [&]() -> mb_status {
    set_threads(threads);
    if (mb_status status = readable(file, err))
      return status;
    if (cuda >= 0)
      if (mb_status status = cuda_usable(cuda, err))
        return status;
    auto s = std::make_unique<session>();
    s->path = file;
    s->cuda = cuda < 0 ? -1 : cuda;
#ifdef MB_TORCH_CUDA
    if (s->cuda >= 0) {
      c10::cuda::CUDAGuard device(static_cast<c10::DeviceIndex>(s->cuda));
      s->clock = std::make_unique<cuda_clock>();
      C10_CUDA_CHECK(cudaEventCreate(&s->clock->start));
      C10_CUDA_CHECK(cudaEventCreate(&s->clock->end));
    }
#endif
    try {
      open(*s);
    } catch (const c10::Error &e) {
      std::string text = e.what_without_backtrace();
      return fail(err, MB_STATUS_PARSE,
                  file + ": not " + what +
                      " libtorch " TORCH_VERSION " can load: " + summary(text),
                  text);
    }
    if (mb_status status = check(*s))
      return status;
    s->inputs.resize((size_t)n_inputs);
    s->bound.resize((size_t)n_inputs);
    s->on_device.resize((size_t)n_inputs);
    *session_out = s.release();
    return MB_STATUS_OK;
  });
}

// The device a session runs on.
c10::Device device_of(const session &s) {
  return s.cuda < 0
             ? c10::Device(c10::kCPU)
             : c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(s.cuda));
}

mb_status module_load(const char *path, int threads, int n_inputs, int cuda,
                      void **session_out, mb_error *err) {
  return open_session(
      path, threads, n_inputs, cuda, "a TorchScript file", session_out, err,
      [](session &s) {
        s.module = torch::jit::load(s.path, device_of(s));
        s.module.eval();
      },
      [&](session &s) { return check_signature(s, n_inputs, err); });
}

#ifdef MB_HAVE_AOTI
mb_status module_load_package(const char *path, int threads, int n_inputs,
                              int cuda, void **session_out, mb_error *err) {
  return open_session(
      path, threads, n_inputs, cuda, "an AOTInductor package", session_out, err,
      [](session &s) {
        // "model": the name aoti_compile_and_package gives a package's
        // model; one runner: one inference at a time, as the engine runs.
        s.package = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
            s.path, "model", false, 1, (c10::DeviceIndex)s.cuda);
      },
      [&](session &s) {
        // The package's code was compiled for one device: it must be the
        // one asked for.
        auto metadata = s.package->get_metadata();
        auto it = metadata.find("AOTI_DEVICE_KEY");
        std::string compiled = it == metadata.end() ? "cpu" : it->second;
        std::string wanted = s.cuda < 0 ? "cpu" : "cuda";
        if (compiled != wanted)
          return fail(err, MB_STATUS_UNSUPPORTED,
                      s.path + ": the package was compiled for " + compiled +
                          " and this run is on " + wanted +
                          " (compile it with aoti_compile_and_package on a " +
                          wanted + " module and inputs)");
        s.package_args.resize((size_t)n_inputs);
        return MB_STATUS_OK;
      });
}
#endif

// The timed call itself: forward() or the package's run(), its result
// kept in the session.
void call(session &s) {
#ifdef MB_HAVE_AOTI
  if (s.package) {
    for (size_t i = 0; i < s.inputs.size(); i++)
      s.package_args[i] = s.inputs[i].toTensor();
    c10::List<at::Tensor> outputs;
    for (at::Tensor &t : s.package->run(s.package_args))
      outputs.push_back(std::move(t));
    s.result = c10::IValue(std::move(outputs));
    s.has_result = true;
    return;
  }
#endif
  s.result = s.module.forward(s.inputs);
  s.has_result = true;
}

mb_status module_run(void *handle, const mb_libtorch_tensor *inputs,
                     mb_error *err) {
  session &s = *static_cast<session *>(handle);
  return guarded(
      err, s.path + ": " + entry_point(s) + " failed", [&]() -> mb_status {
        for (size_t i = 0; i < s.inputs.size(); i++) {
          mb_status status = bind_input(s, (int)i, inputs[i], err);
          if (status)
            return status;
        }
        c10::InferenceMode guard;
        s.has_result = false;
        s.outputs_ready = false;
#ifdef MB_TORCH_CUDA
        if (s.cuda >= 0) {
          c10::cuda::CUDAGuard device(static_cast<c10::DeviceIndex>(s.cuda));
          cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
          s.clock->timed = false;
          C10_CUDA_CHECK(cudaEventRecord(s.clock->start, stream));
          call(s);
          C10_CUDA_CHECK(cudaEventRecord(s.clock->end, stream));
          torch::cuda::synchronize(s.cuda);
          s.clock->timed = true;
          return MB_STATUS_OK;
        }
#endif
        call(s);
        return MB_STATUS_OK;
      });
}

mb_status module_outputs(void *handle, const mb_libtorch_tensor **outputs_out,
                         int *count_out, mb_error *err) {
  session &s = *static_cast<session *>(handle);
  *outputs_out = nullptr;
  *count_out = 0;
  return guarded(err, s.path + ": outputs", [&]() -> mb_status {
    if (!s.has_result)
      return fail(err, MB_STATUS_INVALID_ARGUMENT,
                  s.path + ": no outputs before a successful run");
    if (!s.outputs_ready) {
      s.out_tensors.clear();
      s.out_names.clear();
      s.out_views.clear();
      std::string bad;
      if (!flatten(s.result, "the result", "", s, &bad))
        return fail(err, MB_STATUS_UNSUPPORTED, not_tensors(s, bad));
      c10::InferenceMode guard;
      for (size_t i = 0; i < s.out_tensors.size(); i++) {
        mb_status status = convert_output(s, i, err);
        if (status)
          return status;
      }
      for (size_t i = 0; i < s.out_views.size(); i++)
        s.out_views[i].name =
            s.out_names[i].empty() ? nullptr : s.out_names[i].c_str();
      s.outputs_ready = true;
    }
    *outputs_out = s.out_views.empty() ? nullptr : s.out_views.data();
    *count_out = (int)s.out_views.size();
    return MB_STATUS_OK;
  });
}

double module_gpu_compute_ms(void *handle) {
#ifdef MB_TORCH_CUDA
  session &s = *static_cast<session *>(handle);
  float ms = -1.0f;
  if (s.cuda < 0 || !s.clock->timed ||
      cudaEventElapsedTime(&ms, s.clock->start, s.clock->end) != cudaSuccess)
    return -1.0;
  return ms;
#else
  (void)handle;
  return -1.0;
#endif
}

int module_gpu_describe(void *handle, mb_host_gpu *gpu) {
#ifdef MB_TORCH_CUDA
  session &s = *static_cast<session *>(handle);
  if (s.cuda < 0)
    return 0;
  try {
    // The name is cudaDeviceProp's first field; the rest of the struct
    // changes between CUDA versions (the headers compiled against may be
    // older than the runtime that fills it), hence the room to spare and
    // the attributes for the compute capability.
    alignas(cudaDeviceProp) unsigned char prop[sizeof(cudaDeviceProp) + 4096];
    int major = 0, minor = 0, runtime = 0;
    C10_CUDA_CHECK(cudaGetDeviceProperties(
        reinterpret_cast<cudaDeviceProp *>(prop), s.cuda));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(
        &major, cudaDevAttrComputeCapabilityMajor, s.cuda));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(
        &minor, cudaDevAttrComputeCapabilityMinor, s.cuda));
    C10_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    gpu->index = s.cuda;
    const char *name = reinterpret_cast<cudaDeviceProp *>(prop)->name;
    size_t len = strnlen(name, sizeof(cudaDeviceProp::name));
    len = std::min(len, sizeof gpu->name - 1);
    std::memcpy(gpu->name, name, len);
    gpu->name[len] = '\0';
    std::snprintf(gpu->compute_capability, sizeof gpu->compute_capability,
                  "%d.%d", major, minor);
    std::snprintf(gpu->cuda_runtime, sizeof gpu->cuda_runtime, "%d.%d",
                  runtime / 1000, runtime % 1000 / 10);
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
        static_cast<c10::DeviceIndex>(s.cuda));
    gpu->memory_peak_mb = (double)stats.allocated_bytes[0].peak / (1 << 20);
    return 1;
  } catch (const std::exception &) {
    return 0;
  }
#else
  (void)handle;
  (void)gpu;
  return 0;
#endif
}

mb_status module_gpu_copies(void *handle, const mb_libtorch_tensor *inputs,
                            int n, double *h2d_ms, double *d2h_ms, double *mb,
                            mb_error *err) {
  session &s = *static_cast<session *>(handle);
  return guarded(err, s.path + ": timed copies", [&]() -> mb_status {
    if (s.cuda < 0)
      return fail(err, MB_STATUS_UNSUPPORTED,
                  s.path + ": timed copies of a session on the CPU");
#ifdef MB_TORCH_CUDA
    c10::InferenceMode mode;
    c10::cuda::CUDAGuard device(static_cast<c10::DeviceIndex>(s.cuda));
    std::vector<at::Tensor> src, dst, outs, back;
    for (size_t i = 0; i < s.inputs.size(); i++) {
      at::Tensor t;
      if (mb_status status = host_tensor((int)i, inputs[i], &t, err))
        return status;
      src.push_back(t.contiguous().pin_memory());
      dst.push_back(at::empty_like(src.back(), device_of(s)));
    }
    if (s.has_result)
      collect(s.result, outs);
    for (const at::Tensor &t : outs)
      back.push_back(at::empty(t.sizes(), at::TensorOptions()
                                              .dtype(t.scalar_type())
                                              .pinned_memory(t.is_cuda())));
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cuda_clock &c = *s.clock;
    auto timed = [&](std::vector<at::Tensor> &to, std::vector<at::Tensor> &from,
                     double *ms_out) {
      C10_CUDA_CHECK(cudaEventRecord(c.start, stream));
      for (size_t k = 0; k < to.size(); k++)
        to[k].copy_(from[k], true);
      C10_CUDA_CHECK(cudaEventRecord(c.end, stream));
      C10_CUDA_CHECK(cudaEventSynchronize(c.end));
      float ms = 0.0f;
      C10_CUDA_CHECK(cudaEventElapsedTime(&ms, c.start, c.end));
      *ms_out = ms;
    };
    c.timed = false; // the events now hold a copy, not the last run
    for (int k = 0; k < n; k++) {
      timed(dst, src, &h2d_ms[k]);
      timed(back, outs, &d2h_ms[k]);
    }
    double h2d = 0, d2h = 0;
    for (const at::Tensor &t : src)
      h2d += (double)t.nbytes();
    for (const at::Tensor &t : back)
      d2h += (double)t.nbytes();
    mb[0] = h2d / (1 << 20);
    mb[1] = d2h / (1 << 20);
    return MB_STATUS_OK;
#else
    (void)inputs, (void)n, (void)h2d_ms, (void)d2h_ms, (void)mb;
    return MB_STATUS_UNSUPPORTED;
#endif
  });
}

void module_release(void *handle) {
  try {
    delete static_cast<session *>(handle);
  } catch (...) {
    // A destructor that throws leaves nothing more to release.
  }
}

char *module_take_error_detail() {
  if (last_detail.empty())
    return nullptr;
  char *copy = static_cast<char *>(std::malloc(last_detail.size() + 1));
  if (copy)
    std::memcpy(copy, last_detail.c_str(), last_detail.size() + 1);
  last_detail.clear();
  return copy;
}

const mb_libtorch_module module_table = {
    MB_LIBTORCH_ABI_VERSION,
    TORCH_VERSION,
    module_load,
    module_run,
    module_outputs,
    module_release,
#ifdef MB_HAVE_AOTI
    module_load_package,
#else
    nullptr,
#endif
    module_take_error_detail,
    module_gpu_compute_ms,
    module_gpu_describe,
    module_gpu_copies,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const mb_libtorch_module *
mb_libtorch_module_get(void) {
  return &module_table;
}
