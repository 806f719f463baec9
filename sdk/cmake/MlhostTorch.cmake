# mlh_find_torch(): finds LibTorch for mlhost's build and for plugins built against the
# installed SDK, with or without its CUDA half.
#
# A PyPI torch wheel (or a libtorch zip) for Linux is a CUDA build: libtorch_cpu.so and
# libc10.so hold everything a CPU needs, libtorch_cuda.so the rest. Its TorchConfig.cmake
# always enables the CUDA language and looks for the CUDA toolkit (nvcc), which a CPU machine
# has no reason to install. So:
#
#   MLH_TORCH_CUDA=ON    the whole LibTorch through its own TorchConfig.cmake (CUDA code
#                        compiled in; needs nvcc and the CUDA libraries the wheel depends on)
#   MLH_TORCH_CUDA=OFF   LibTorch's CPU half alone (libtorch_cpu.so, libc10.so) as an imported
#                        target `torch`, without the CUDA language: no toolkit needed, and at
#                        run time only the CUDA runtime and CUPTI libraries that libtorch_cpu.so
#                        itself links (a few MB) must be present, not cuBLAS, cuDNN or NCCL
#   MLH_TORCH_CUDA=AUTO  (the default) ON where this LibTorch has a CUDA half, the libraries
#                        that half needs are installed (its dependencies all resolve) and a
#                        CUDA compiler is found; OFF otherwise, saying why
#
# A LibTorch without a CUDA half (Debian's 1.13, a CPU zip) is found through its own
# TorchConfig.cmake whatever MLH_TORCH_CUDA says. Either way the caller gets what
# find_package(Torch) gives: the target `torch`, TORCH_LIBRARIES, TORCH_INSTALL_PREFIX,
# Torch_VERSION, Torch_DIR and TORCH_CUDA_LIBRARIES (empty without CUDA); and
# MLH_TORCH_CUDA_FOR_PACKAGE records the choice for the SDK's installed package, so that
# plugins built against it link the same half.

set(MLH_TORCH_CUDA AUTO CACHE STRING "Compile LibTorch's CUDA paths: AUTO, ON or OFF (sdk/cmake/MlhostTorch.cmake)")
set_property(CACHE MLH_TORCH_CUDA PROPERTY STRINGS AUTO ON OFF)

# Whether every library that libtorch_cuda.so needs is found by the loader (a wheel installed
# without its nvidia-* dependencies is not), and why not.
function(_mlh_torch_cuda_libraries_resolve lib out_ok out_why)
  execute_process(COMMAND ldd "${lib}" OUTPUT_VARIABLE _ldd ERROR_VARIABLE _ldd RESULT_VARIABLE _rc)
  string(REGEX MATCHALL "[^ \t\n]+ => not found" _missing "${_ldd}")
  if(NOT _rc EQUAL 0)
    set(${out_ok} FALSE PARENT_SCOPE)
    set(${out_why} "ldd could not read ${lib}" PARENT_SCOPE)
  elseif(_missing)
    list(TRANSFORM _missing REPLACE " => not found" "")
    list(JOIN _missing ", " _missing)
    set(${out_ok} FALSE PARENT_SCOPE)
    set(${out_why} "the CUDA libraries it needs are not installed (${_missing})" PARENT_SCOPE)
  else()
    set(${out_ok} TRUE PARENT_SCOPE)
    set(${out_why} "" PARENT_SCOPE)
  endif()
endfunction()

# LibTorch's CPU half as imported targets: what TorchConfig.cmake and Caffe2Targets.cmake
# declare for libtorch_cpu.so and libc10.so (include folders, compile definitions, the C++
# standard LibTorch 2.x's headers need), without the CUDA half.
macro(_mlh_torch_cpu_targets root)
  include("${Torch_DIR}/TorchConfigVersion.cmake")  # sets PACKAGE_VERSION
  set(Torch_VERSION "${PACKAGE_VERSION}")
  unset(PACKAGE_VERSION)
  unset(PACKAGE_VERSION_COMPATIBLE)
  unset(PACKAGE_VERSION_EXACT)
  set(TORCH_INSTALL_PREFIX "${root}")
  set(TORCH_INCLUDE_DIRS "${root}/include" "${root}/include/torch/csrc/api/include")
  add_library(c10 SHARED IMPORTED)
  set_target_properties(c10 PROPERTIES IMPORTED_LOCATION "${root}/lib/libc10.so"
    INTERFACE_INCLUDE_DIRECTORIES "${root}/include")
  add_library(torch_cpu SHARED IMPORTED)
  set_target_properties(torch_cpu PROPERTIES IMPORTED_LOCATION "${root}/lib/libtorch_cpu.so"
    INTERFACE_INCLUDE_DIRECTORIES "${root}/include"
    INTERFACE_COMPILE_DEFINITIONS "USE_DISTRIBUTED;USE_C10D_GLOO;USE_RPC;USE_TENSORPIPE"
    INTERFACE_LINK_LIBRARIES c10)
  add_library(torch INTERFACE IMPORTED)
  set_target_properties(torch PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "torch_cpu;c10")
  if(Torch_VERSION VERSION_GREATER_EQUAL 2.10)
    target_compile_features(torch INTERFACE cxx_std_20)  # as its TorchConfig.cmake asks
  endif()
  set(TORCH_LIBRARIES torch)
  set(TORCH_CUDA_LIBRARIES "")
  set(TORCH_FOUND TRUE)
  set(Torch_FOUND TRUE)
endmacro()

macro(mlh_find_torch)
  if(NOT MLH_TORCH_CUDA MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "MLH_TORCH_CUDA is '${MLH_TORCH_CUDA}': want AUTO, ON or OFF")
  endif()
  # Where TorchConfig.cmake is, as find_package(Torch) would search (Torch_DIR, the prefix path).
  find_path(Torch_DIR TorchConfig.cmake
    PATH_SUFFIXES Torch share/cmake/Torch lib/cmake/Torch lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/Torch
    DOC "The folder of LibTorch's TorchConfig.cmake")
  if(NOT Torch_DIR)
    message(FATAL_ERROR "LibTorch not found: give its root in CMAKE_PREFIX_PATH (or Torch_DIR); "
      "bash scripts/build.sh installs and finds one")
  endif()
  get_filename_component(_mlh_torch_root "${Torch_DIR}/../../.." ABSOLUTE)
  set(_mlh_torch_cuda_lib "${_mlh_torch_root}/lib/libtorch_cuda.so")
  set(_mlh_cpu_half_only FALSE)
  if(NOT EXISTS "${_mlh_torch_cuda_lib}")
    if(MLH_TORCH_CUDA STREQUAL "ON")
      message(FATAL_ERROR "MLH_TORCH_CUDA=ON, but the LibTorch at ${_mlh_torch_root} has no CUDA (no lib/libtorch_cuda.so)")
    endif()
  elseif(MLH_TORCH_CUDA STREQUAL "OFF")
    set(_mlh_cpu_half_only TRUE)
  elseif(MLH_TORCH_CUDA STREQUAL "AUTO")
    _mlh_torch_cuda_libraries_resolve("${_mlh_torch_cuda_lib}" _mlh_ok _mlh_why)
    if(_mlh_ok AND NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
      find_program(MLH_NVCC nvcc HINTS /usr/local/cuda/bin DOC "The CUDA compiler LibTorch's CUDA half is built with")
      if(NOT MLH_NVCC)
        set(_mlh_ok FALSE)
        set(_mlh_why "no CUDA compiler (nvcc) is on PATH or in /usr/local/cuda/bin")
      endif()
    endif()
    if(NOT _mlh_ok)
      set(_mlh_cpu_half_only TRUE)
      message(STATUS "mlhost: LibTorch without its CUDA half: ${_mlh_why} (MLH_TORCH_CUDA=ON asks for CUDA)")
    endif()
  endif()
  if(_mlh_cpu_half_only)
    _mlh_torch_cpu_targets("${_mlh_torch_root}")
    set(MLH_TORCH_CUDA_FOR_PACKAGE OFF)
    message(STATUS "mlhost: LibTorch ${Torch_VERSION} (CPU half) from ${_mlh_torch_root}")
  else()
    find_package(Torch REQUIRED)
    set(MLH_TORCH_CUDA_FOR_PACKAGE AUTO)
    set(_mlh_half "CPU only")
    if(EXISTS "${_mlh_torch_cuda_lib}")
      set(MLH_TORCH_CUDA_FOR_PACKAGE ON)
      set(_mlh_half "with its CUDA half")
    endif()
    message(STATUS "mlhost: LibTorch ${Torch_VERSION} (${_mlh_half}) from ${_mlh_torch_root}")
  endif()
endmacro()

# mlh_cpu_kernel_sources(<target> <source>...): compiles these sources of <target> as
# hand-written CPU kernels beside LibTorch (mlh/runtime/cpu_kernel_support.hpp):
#   -fopenmp            at::parallel_for is an inline OpenMP loop: compiled without it, it runs
#                       on one thread. With it, the loop runs on LibTorch's own OpenMP threads
#                       (the one libgomp.so.1 the process loads: the wheel's, found first in
#                       the run path, or the system's that Debian's LibTorch uses).
#   -fno-trapping-math  float comparisons may run unconditionally, so the loops vectorize.
# They skip the target's precompiled LibTorch header, which was made without OpenMP (GCC
# would refuse it), and the target links libgomp, not OpenMP's compile flags.
function(mlh_cpu_kernel_sources target)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
  get_target_property(_mlh_dir ${target} SOURCE_DIR)
  set_source_files_properties(${ARGN} DIRECTORY ${_mlh_dir} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  set_property(SOURCE ${ARGN} DIRECTORY ${_mlh_dir} APPEND PROPERTY COMPILE_OPTIONS ${OpenMP_CXX_FLAGS} -fno-trapping-math)
  target_link_libraries(${target} PRIVATE ${OpenMP_CXX_LIBRARIES})
endfunction()

# mlh_torch_precompile_headers(<target>): compiles <target>'s sources with LibTorch's headers
# precompiled (mlh/runtime/torch_pch.hpp; 20-30 s a file without). In mlhost's own build the
# target reuses the runtime's precompiled header; in a project built against the installed
# SDK (an algorithm folder copied out of the tree) the first target that asks makes one, and
# the project's later targets reuse it. GCC accepts a precompiled header only where -fPIC
# agrees, so the targets are position-independent (they end up in a plugin anyway).
function(mlh_torch_precompile_headers target)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(TARGET mlhost_runtime)
    target_precompile_headers(${target} REUSE_FROM mlhost_runtime)
    return()
  endif()
  get_property(_mlh_pch_owner DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY MLH_TORCH_PCH_TARGET)
  if(_mlh_pch_owner)
    target_precompile_headers(${target} REUSE_FROM ${_mlh_pch_owner})
  else()
    target_precompile_headers(${target} PRIVATE <mlh/runtime/torch_pch.hpp>)
    set_property(DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY MLH_TORCH_PCH_TARGET ${target})
  endif()
endfunction()
