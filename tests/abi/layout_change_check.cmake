# Proves the layout lock works: compiles abi_static_c11.c against a copy of the SDK headers
# (must succeed), then against the same copy with one field inserted into a locked struct
# (mlh_device_record gains an int32_t after device_class) and must fail on a static
# assertion naming the moved field. Run by CTest:
#   cmake -DCC=<c compiler> -DSDK_INCLUDE=<sdk/include> -DTEST_DIR=<tests/abi> -DWORK=<dir> -P this
foreach(_var CC SDK_INCLUDE TEST_DIR WORK)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "layout_change_check: -D${_var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(COPY ${SDK_INCLUDE}/mlh DESTINATION ${WORK}/intact)
file(COPY ${SDK_INCLUDE}/mlh DESTINATION ${WORK}/changed)

set(_header ${WORK}/changed/mlh/mlh_device.h)
file(READ ${_header} _text)
string(REPLACE "  int32_t device_class;" "  int32_t device_class;\n  int32_t inserted_by_layout_check;" _changed "${_text}")
if(_changed STREQUAL _text)
  message(FATAL_ERROR "layout_change_check: could not find mlh_device_record.device_class in ${_header}")
endif()
file(WRITE ${_header} "${_changed}")

function(_compile include_dir out_result out_log)
  execute_process(
    COMMAND ${CC} -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only
            -I${include_dir} -I${TEST_DIR} ${TEST_DIR}/abi_static_c11.c
    RESULT_VARIABLE _result OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  set(${out_result} ${_result} PARENT_SCOPE)
  set(${out_log} "${_out}${_err}" PARENT_SCOPE)
endfunction()

_compile(${WORK}/intact _ok _log)
if(NOT _ok EQUAL 0)
  message(FATAL_ERROR "the unchanged headers must pass the layout checks:\n${_log}")
endif()
_compile(${WORK}/changed _bad _log)
if(_bad EQUAL 0)
  message(FATAL_ERROR "a field inserted into mlh_device_record was NOT caught by abi_static_c11.c")
endif()
if(NOT _log MATCHES "offsetof\\(mlh_device_record, index\\)")
  message(FATAL_ERROR "the layout check failed, but not on the moved field mlh_device_record.index:\n${_log}")
endif()
message(STATUS "layout change caught: mlh_device_record.index moved")
