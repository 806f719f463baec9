# Where binaries that link LibTorch find it and its CUDA libraries at run time, in the build
# tree and once installed. Included after find_package(Torch); installed with the SDK, so
# plugins built against it get the same.
#
# - A LibTorch outside the system folders (a PyTorch wheel's site-packages/torch/lib, an
#   unpacked libtorch zip): its lib folder goes into the run path explicitly. CMake's own
#   build-tree RPATH is dropped on install, and a wheel inside the checkout (.venv/) counts
#   as build tree, so installed plugins would not find libtorch_cuda.so otherwise.
# - A CUDA LibTorch from a wheel needs the CUDA libraries of the wheels installed beside it
#   (site-packages/nvidia/*/lib: the CUDA runtime it was built against, cuDNN, NCCL,
#   cuSPARSELt, NVSHMEM; even its CPU half links the CUDA runtime and CUPTI);
#   libtorch_cpu.so and libtorch_cuda.so find them through their own RPATH. Our binaries
#   must link and run against the same ones: otherwise the linker resolves libtorch_cuda.so's
#   needs from the CUDA toolkit that compiles us (an older NCCL: "undefined reference to
#   ncclCommGrow"), and libcudart.so.13 loads from there too. Those folders go first in the
#   run path and in the linker's search for the libraries' own dependencies.
#
# Set on the torch target, so only what links LibTorch gets them (never the host).
set(_mlh_torch_run_path "")
get_filename_component(_mlh_torch_lib "${TORCH_INSTALL_PREFIX}/lib" ABSOLUTE)
if(EXISTS "${_mlh_torch_lib}/libtorch.so" AND NOT _mlh_torch_lib IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  list(APPEND _mlh_torch_run_path "${_mlh_torch_lib}")
endif()
get_filename_component(_mlh_torch_site "${TORCH_INSTALL_PREFIX}/.." ABSOLUTE)
file(GLOB _mlh_wheel_cuda_lib_dirs LIST_DIRECTORIES true "${_mlh_torch_site}/nvidia/*/lib")
list(PREPEND _mlh_torch_run_path ${_mlh_wheel_cuda_lib_dirs})
get_property(_mlh_torch_link_options TARGET torch PROPERTY INTERFACE_LINK_OPTIONS)
if(_mlh_torch_run_path AND NOT _mlh_torch_link_options MATCHES "-rpath-link")  # once per project
  list(JOIN _mlh_torch_run_path ":" _mlh_dirs)
  set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS
    "LINKER:-rpath,${_mlh_dirs}" "LINKER:-rpath-link,${_mlh_dirs}")
  message(STATUS "mlhost: LibTorch run path ${_mlh_dirs}")
endif()
