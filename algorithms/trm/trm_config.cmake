# trm_config: the config and the options it makes for data/ and sampling, free of LibTorch. Included by this
# folder's CMakeLists.txt, and by fuzz/CMakeLists.txt in a build without LibTorch (the
# sanitizer build), where trm_data's tests link it too.
if(DEFINED ALGORITHM_NAME)
  set(_trm_config_name ${ALGORITHM_NAME})
else()
  set(_trm_config_name trm)
endif()
add_library(trm_config STATIC ${CMAKE_CURRENT_LIST_DIR}/config.cpp ${CMAKE_CURRENT_LIST_DIR}/config_specs.cpp)
target_include_directories(trm_config PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(trm_config PUBLIC trm_data mlhost::sdk_headers nlohmann_json::nlohmann_json)
target_compile_options(trm_config PRIVATE -Wall -Wextra)
target_compile_definitions(trm_config PRIVATE MLH_PLUGIN_NAME="${_trm_config_name}")
