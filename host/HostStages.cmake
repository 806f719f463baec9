# mlh_host_stage(NAME DEPENDS stage... PUBLISHES header...): the host's stage NAME, its
# sources in the folder of that name, as the library mlhost_NAME linking the stages it depends
# on and ${MLH_HOST_STAGE_LIBRARIES}. Stages are declared in the order a run goes through
# them, and a stage may depend only on earlier ones, so they cannot form a cycle. Every
# `#include "<stage>/<header>"` in the folder is checked: another stage's header must belong
# to a stage this one depends on, and be one that stage publishes. Anything else stops the
# configure with an error naming the file, the include and the rule.
set(_mlh_host_stages "")

function(mlh_host_stage name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;PUBLISHES" ${ARGN})
  foreach(dep IN LISTS ARG_DEPENDS)
    if(NOT dep IN_LIST _mlh_host_stages)
      message(FATAL_ERROR "host stage '${name}' depends on '${dep}', which is not an earlier stage (${_mlh_host_stages})")
    endif()
  endforeach()
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.hpp)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "\"([a-z_]+)/([^\"]+)\"" _ "${line}")
      set(stage ${CMAKE_MATCH_1})
      set(header ${CMAKE_MATCH_2})
      if(stage STREQUAL name)
        continue()
      endif()
      file(RELATIVE_PATH shown ${CMAKE_CURRENT_SOURCE_DIR} ${file})
      if(NOT stage IN_LIST ARG_DEPENDS)
        message(FATAL_ERROR "${shown}: includes ${stage}/${header}, but stage '${name}' does not depend on '${stage}' "
                            "(host/CMakeLists.txt: it depends on ${ARG_DEPENDS})")
      endif()
      if(NOT header IN_LIST _mlh_published_${stage})
        message(FATAL_ERROR "${shown}: includes ${stage}/${header}, which stage '${stage}' does not publish "
                            "(host/CMakeLists.txt: ${_mlh_published_${stage}})")
      endif()
    endforeach()
  endforeach()
  set(target mlhost_${name})
  if(sources)
    add_library(${target} STATIC ${sources})
    target_compile_options(${target} PRIVATE -Wall -Wextra)
    # In batches of files (MLH_UNITY_BUILD, the top-level CMakeLists.txt): the host's files are
    # mostly JSON, spdlog and the standard library, instantiated once a batch instead of once a
    # file; the host builds in about half the CPU time.
    if(MLH_UNITY_BUILD)
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    endif()
    set(scope PUBLIC)
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${target} ${scope} ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${target} ${scope} MLHOST_VERSION="${PROJECT_VERSION}")
  target_link_libraries(${target} ${scope} ${MLH_HOST_STAGE_LIBRARIES})
  foreach(dep IN LISTS ARG_DEPENDS)
    target_link_libraries(${target} ${scope} mlhost_${dep})
  endforeach()
  set(_mlh_published_${name} ${ARG_PUBLISHES} PARENT_SCOPE)
  set(_mlh_host_stages ${_mlh_host_stages} ${name} PARENT_SCOPE)
endfunction()

