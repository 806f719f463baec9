# Rewrites fields of a plugin manifest written by mlh_add_plugin(), so the fault-injection
# cases that need a manifest that lies keep the SDK's exact manifest format otherwise.
#
#   cmake -DIN=<manifest> -DOUT=<manifest> [-DNAME=..] [-DLIBRARY=..] [-DDESCRIPTION=..]
#         [-DABI_MAJOR=..] [-DARCH=..] -P manifest_edit.cmake
foreach(_var IN ITEMS IN OUT)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "manifest_edit.cmake: -D${_var}= is required")
  endif()
endforeach()
file(READ "${IN}" _text)

function(_edit key regex replacement)
  if(NOT _text MATCHES "${regex}")
    message(FATAL_ERROR "manifest_edit.cmake: ${IN} has no ${key} field matching ${regex}; "
                        "did the manifest format of mlh_add_plugin() change?")
  endif()
  string(REGEX REPLACE "${regex}" "${replacement}" _text "${_text}")
  set(_text "${_text}" PARENT_SCOPE)
endfunction()

if(DEFINED NAME)
  _edit(name "\"name\": \"[^\"]*\"" "\"name\": \"${NAME}\"")
endif()
if(DEFINED LIBRARY)
  _edit(library "\"library\": \"[^\"]*\"" "\"library\": \"${LIBRARY}\"")
endif()
if(DEFINED DESCRIPTION)
  _edit(description "\"description\": \"[^\"]*\"" "\"description\": \"${DESCRIPTION}\"")
endif()
if(DEFINED ABI_MAJOR)
  _edit(abi.major "\"abi\": {\"major\": [0-9]+" "\"abi\": {\"major\": ${ABI_MAJOR}")
endif()
if(DEFINED ARCH)
  _edit(build.arch "\"arch\": \"[^\"]*\"" "\"arch\": \"${ARCH}\"")
endif()
file(WRITE "${OUT}" "${_text}")
