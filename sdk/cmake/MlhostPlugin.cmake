# mlh_add_plugin(): builds an mlhost plugin and writes its manifest beside it.
#
#   mlh_add_plugin(<name>
#     KIND device|algorithm
#     VERSION <x.y.z>
#     DESCRIPTION "<one line>"
#     SOURCES <files...>
#     [TORCH]                       # links LibTorch; records its version, CUDA support and
#                                   # the runtime's distributed backends (gloo, nccl)
#     [DISTRIBUTED <backend>...|NONE]  # with TORCH: the backends to record instead of the
#                                   # runtime's (a plugin that brings its own process group)
#     [TARGET <target name>]        # default: mlhost-plugin-<name>
#     [OUTPUT_DIRECTORY <dir>]      # default: ${MLH_PLUGIN_OUTPUT_DIR}
#     [INSTALL_DESTINATION <dir>])  # default: ${MLH_PLUGIN_INSTALL_DIR}; neither: not installed
#
# The library is libmlhost-<name>.so. The manifest
# <name>.plugin.json records kind, name, version, ABI version, library file, description
# and build facts. With an install destination, `cmake --install` copies library and manifest
# there (relative paths are under the install prefix; a host finds plugins in
# <prefix>/lib/mlhost/plugins, or in any folder given by --plugin-dir or MLH_PLUGIN_PATH).
# MLH_PLUGIN_NAME and MLH_PLUGIN_VERSION are defined for the sources from
# the same values, so the library's answer to negotiation matches its manifest.
# Used for in-tree plugins and, through the installed CMake package, by third parties.

set(_MLH_PLUGIN_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(_mlh_abi_version out_major out_minor)
  get_target_property(_inc mlhost::sdk_headers INTERFACE_INCLUDE_DIRECTORIES)
  set(_header "")
  foreach(_dir IN LISTS _inc)
    string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" _dir "${_dir}")
    if(EXISTS "${_dir}/mlh/mlh_abi.h")
      set(_header "${_dir}/mlh/mlh_abi.h")
    endif()
  endforeach()
  if(NOT _header)
    message(FATAL_ERROR "mlh_add_plugin: cannot find mlh/mlh_abi.h in mlhost::sdk_headers")
  endif()
  file(STRINGS "${_header}" _major REGEX "^#define MLH_ABI_VERSION_MAJOR [0-9]+")
  file(STRINGS "${_header}" _minor REGEX "^#define MLH_ABI_VERSION_MINOR [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _major "${_major}")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _minor "${_minor}")
  set(${out_major} ${_major} PARENT_SCOPE)
  set(${out_minor} ${_minor} PARENT_SCOPE)
endfunction()

function(mlh_add_plugin name)
  cmake_parse_arguments(ARG "TORCH" "KIND;VERSION;DESCRIPTION;TARGET;OUTPUT_DIRECTORY;INSTALL_DESTINATION" "SOURCES;DISTRIBUTED" ${ARGN})
  if(NOT name MATCHES "^[a-z][a-z0-9_-]*$")
    message(FATAL_ERROR "mlh_add_plugin: name '${name}' must match [a-z][a-z0-9_-]*")
  endif()
  if(NOT ARG_KIND STREQUAL "device" AND NOT ARG_KIND STREQUAL "algorithm")
    message(FATAL_ERROR "mlh_add_plugin(${name}): KIND must be device or algorithm, got '${ARG_KIND}'")
  endif()
  if(NOT ARG_VERSION OR NOT ARG_SOURCES)
    message(FATAL_ERROR "mlh_add_plugin(${name}): VERSION and SOURCES are required")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET mlhost-plugin-${name})
  endif()
  if(NOT ARG_OUTPUT_DIRECTORY)
    if(DEFINED MLH_PLUGIN_OUTPUT_DIR)
      set(ARG_OUTPUT_DIRECTORY ${MLH_PLUGIN_OUTPUT_DIR})
    else()
      set(ARG_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()

  add_library(${ARG_TARGET} MODULE ${ARG_SOURCES})
  set_target_properties(${ARG_TARGET} PROPERTIES
    OUTPUT_NAME mlhost-${name}
    PREFIX lib
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY}
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_compile_definitions(${ARG_TARGET} PRIVATE
    MLH_PLUGIN_NAME="${name}" MLH_PLUGIN_VERSION="${ARG_VERSION}")
  target_link_libraries(${ARG_TARGET} PRIVATE mlhost::sdk_headers)
  if(NOT APPLE)
    # A plugin must not leave undefined symbols for the host to satisfy, and exports only
    # its entry symbol: no template instantiations or library internals leak out to clash
    # with another plugin's.
    set(_version_script ${CMAKE_CURRENT_BINARY_DIR}/mlhost-plugin-exports.map)
    if(NOT EXISTS ${_version_script})
      file(WRITE ${_version_script} "{ global: mlh_plugin_negotiate; local: *; };\n")
    endif()
    target_link_options(${ARG_TARGET} PRIVATE "LINKER:--no-undefined" "LINKER:--version-script=${_version_script}")
    set_property(TARGET ${ARG_TARGET} APPEND PROPERTY LINK_DEPENDS ${_version_script})
  endif()

  set(_torch "null")
  if(ARG_TORCH)
    if(NOT TORCH_FOUND AND NOT Torch_FOUND)
      message(FATAL_ERROR "mlh_add_plugin(${name}): TORCH given but find_package(Torch) was not run")
    endif()
    target_link_libraries(${ARG_TARGET} PRIVATE ${TORCH_LIBRARIES})
    # The LibTorch device types its LibTorch runs: the host puts a plugin only on the devices
    # of those (build.torch.backends). "cuda" stays as a flag for hosts older than the list.
    set(_cuda false)
    set(_torch_backends "\"cpu\"")
    if(TORCH_CUDA_LIBRARIES)
      set(_cuda true)
      string(APPEND _torch_backends ", \"cuda\"")
    endif()
    if(APPLE)
      string(APPEND _torch_backends ", \"mps\"")
    endif()
    if(TORCH_LIBRARIES MATCHES "torch_xpu")
      string(APPEND _torch_backends ", \"xpu\"")
    endif()
    # The c10d backends its ranks can talk through: the host refuses, when it plans, a run of
    # several ranks that needs one the plugin lacks (a build without Gloo's headers). Unknown
    # (a runtime that does not say): the field is left out and the host does not refuse.
    set(_distributed "")
    if(ARG_DISTRIBUTED)
      if(NOT ARG_DISTRIBUTED STREQUAL "NONE")
        set(_backends ${ARG_DISTRIBUTED})
      else()
        set(_backends "")
      endif()
      set(_known TRUE)
    else()
      get_property(_known GLOBAL PROPERTY MLH_RUNTIME_DISTRIBUTED SET)
      get_property(_backends GLOBAL PROPERTY MLH_RUNTIME_DISTRIBUTED)
    endif()
    if(_known)
      set(_list "")
      foreach(_b IN LISTS _backends)
        if(NOT _b MATCHES "^(gloo|nccl)$")
          message(FATAL_ERROR "mlh_add_plugin(${name}): DISTRIBUTED takes gloo, nccl or NONE, got '${_b}'")
        endif()
        list(APPEND _list "\"${_b}\"")
      endforeach()
      list(JOIN _list ", " _list)
      set(_distributed ", \"distributed\": [${_list}]")
    endif()
    set(_torch "{\"version\": \"${Torch_VERSION}\", \"backends\": [${_torch_backends}], \"cuda\": ${_cuda}${_distributed}}")
  endif()

  _mlh_abi_version(_abi_major _abi_minor)
  # The compiler of the plugin's sources: C++'s, or C's in a C-only project.
  set(_compiler "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  if(NOT CMAKE_CXX_COMPILER_ID)
    set(_compiler "${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}")
  endif()
  string(REPLACE "\\" "\\\\" _desc "${ARG_DESCRIPTION}")
  string(REPLACE "\"" "\\\"" _desc "${_desc}")
  set(_manifest "{
  \"manifest_version\": 1,
  \"kind\": \"${ARG_KIND}\",
  \"name\": \"${name}\",
  \"version\": \"${ARG_VERSION}\",
  \"abi\": {\"major\": ${_abi_major}, \"minor\": ${_abi_minor}},
  \"library\": \"$<TARGET_FILE_NAME:${ARG_TARGET}>\",
  \"description\": \"${_desc}\",
  \"build\": {
    \"system\": \"${CMAKE_SYSTEM_NAME}\",
    \"arch\": \"${CMAKE_SYSTEM_PROCESSOR}\",
    \"compiler\": \"${_compiler}\",
    \"build_type\": \"$<CONFIG>\",
    \"torch\": ${_torch}
  }
}
")
  file(GENERATE OUTPUT ${ARG_OUTPUT_DIRECTORY}/${name}.plugin.json CONTENT "${_manifest}")
  set_property(TARGET ${ARG_TARGET} PROPERTY MLH_PLUGIN_MANIFEST ${ARG_OUTPUT_DIRECTORY}/${name}.plugin.json)

  if(NOT ARG_INSTALL_DESTINATION AND DEFINED MLH_PLUGIN_INSTALL_DIR)
    set(ARG_INSTALL_DESTINATION ${MLH_PLUGIN_INSTALL_DIR})
  endif()
  if(ARG_INSTALL_DESTINATION)
    # Keep the link-time library folders (a pip wheel's LibTorch, say) in the installed
    # plugin's RUNPATH: the host sets no library path for its plugins.
    set_target_properties(${ARG_TARGET} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
    install(TARGETS ${ARG_TARGET} LIBRARY DESTINATION ${ARG_INSTALL_DESTINATION})
    install(FILES ${ARG_OUTPUT_DIRECTORY}/${name}.plugin.json DESTINATION ${ARG_INSTALL_DESTINATION})
  endif()
endfunction()
