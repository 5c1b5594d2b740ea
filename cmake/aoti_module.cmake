# The AOTInductor module, libmodelbench-aoti.so: src/runtime/libtorch_module.cpp
# built against the libtorch inside a PyTorch >= 2.6 wheel. Included by the
# project's CMakeLists.txt and by tools/aoti-module/CMakeLists.txt (the
# module alone, for a machine that has that wheel but not the project's
# other dependencies, e.g. a GPU machine's CUDA PyTorch).
#
# In: MB_SOURCE_DIR (the checkout), MB_AOTI_TORCH_DIR (the wheel's torch/
# folder), MB_WERROR. Out: the target modelbench_aoti, and MB_AOTI_CUDA ON
# when it runs on CUDA.
#
# It links libtorch.so itself, not only libtorch_cpu: a package's library
# needs libtorch.so, and finds this wheel's only when it is already loaded.
#
# CUDA: when the wheel's libtorch has CUDA (libtorch_cuda.so, c10/cuda
# headers) and the CUDA runtime's headers are found, the module is built
# with MB_TORCH_CUDA and links libtorch_cuda and libc10_cuda (whose own
# dependencies bring the wheel's libcudart). The CUDA runtime's headers
# (cuda_runtime_api.h and the crt/ folder cuda_runtime.h needs; the wheel's
# nvidia/cu*/include has the first only) are looked for in
# MB_CUDA_INCLUDE_DIR, $CUDA_HOME, /usr/local/cuda*, then beside the wheel
# (nvidia/cu*/include, triton's backends/nvidia/include). Any CUDA 12 or
# 13 headers do: the module calls only the runtime's stable entry points.
# Without them the module runs on the CPU only, and asking it for CUDA says
# so.
set(MB_CUDA_INCLUDE_DIR "" CACHE PATH "folder of cuda_runtime_api.h for the AOTInductor module's CUDA side")
file(GLOB MB_AOTI_CUDA_HINTS /usr/local/cuda/include /usr/local/cuda-*/include
  "${MB_AOTI_TORCH_DIR}/../nvidia/cu*/include" "${MB_AOTI_TORCH_DIR}/../nvidia/cuda_runtime/include"
  "${MB_AOTI_TORCH_DIR}/../triton/backends/nvidia/include")
find_path(MB_AOTI_CUDART_INCLUDE NAMES crt/host_config.h
  HINTS ${MB_CUDA_INCLUDE_DIR} "$ENV{CUDA_HOME}/include" ${MB_AOTI_CUDA_HINTS}
  NO_DEFAULT_PATH NO_CACHE)
if(MB_AOTI_CUDART_INCLUDE AND NOT EXISTS "${MB_AOTI_CUDART_INCLUDE}/cuda_runtime_api.h")
  set(MB_AOTI_CUDART_INCLUDE "")
endif()
set(MB_AOTI_CUDA OFF)
if(EXISTS "${MB_AOTI_TORCH_DIR}/lib/libtorch_cuda.so" AND
   EXISTS "${MB_AOTI_TORCH_DIR}/lib/libc10_cuda.so" AND
   EXISTS "${MB_AOTI_TORCH_DIR}/include/c10/cuda/CUDAStream.h" AND MB_AOTI_CUDART_INCLUDE)
  set(MB_AOTI_CUDA ON)
  message(STATUS "AOTInductor module: CUDA (cuda_runtime_api.h in ${MB_AOTI_CUDART_INCLUDE})")
elseif(EXISTS "${MB_AOTI_TORCH_DIR}/lib/libtorch_cuda.so")
  message(STATUS "AOTInductor module: CPU only (its libtorch has CUDA but cuda_runtime_api.h "
    "was not found: -DMB_CUDA_INCLUDE_DIR=...)")
else()
  message(STATUS "AOTInductor module: CPU only (its libtorch is built without CUDA)")
endif()

add_library(modelbench_aoti MODULE ${MB_SOURCE_DIR}/src/runtime/libtorch_module.cpp)
set_target_properties(modelbench_aoti PROPERTIES OUTPUT_NAME modelbench-aoti
  CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
  CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
  BUILD_RPATH "${MB_AOTI_TORCH_DIR}/lib" INSTALL_RPATH "${MB_AOTI_TORCH_DIR}/lib")
target_include_directories(modelbench_aoti PRIVATE
  ${MB_SOURCE_DIR}/include ${MB_SOURCE_DIR}/src)
# SYSTEM: libtorch's headers are not held to our warning flags.
target_include_directories(modelbench_aoti SYSTEM PRIVATE
  ${MB_AOTI_TORCH_DIR}/include ${MB_AOTI_TORCH_DIR}/include/torch/csrc/api/include)
target_compile_options(modelbench_aoti PRIVATE -Wall -Wextra -Wshadow
  -Wno-unused-parameter $<$<BOOL:${MB_WERROR}>:-Werror>)
target_link_options(modelbench_aoti PRIVATE "LINKER:--no-as-needed")
target_link_libraries(modelbench_aoti PRIVATE ${MB_AOTI_TORCH_DIR}/lib/libtorch.so
  ${MB_AOTI_TORCH_DIR}/lib/libtorch_cpu.so ${MB_AOTI_TORCH_DIR}/lib/libc10.so)
if(MB_AOTI_CUDA)
  target_compile_definitions(modelbench_aoti PRIVATE MB_TORCH_CUDA=1)
  target_include_directories(modelbench_aoti SYSTEM PRIVATE ${MB_AOTI_CUDART_INCLUDE})
  target_link_libraries(modelbench_aoti PRIVATE ${MB_AOTI_TORCH_DIR}/lib/libtorch_cuda.so
    ${MB_AOTI_TORCH_DIR}/lib/libc10_cuda.so)
endif()
