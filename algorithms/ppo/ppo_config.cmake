# ppo_config: the config and the specs it makes for env/, free of LibTorch. Included by this
# folder's CMakeLists.txt, and by fuzz/CMakeLists.txt in a build without LibTorch (the
# sanitizer build), where ppo_env's tests link it too.
if(DEFINED ALGORITHM_NAME)
  set(_ppo_config_name ${ALGORITHM_NAME})
else()
  set(_ppo_config_name ppo)
endif()
add_library(ppo_config STATIC ${CMAKE_CURRENT_LIST_DIR}/config.cpp ${CMAKE_CURRENT_LIST_DIR}/env_specs.cpp)
target_include_directories(ppo_config PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(ppo_config PUBLIC ppo_env mlhost::sdk_headers nlohmann_json::nlohmann_json)
target_compile_options(ppo_config PRIVATE -Wall -Wextra)
target_compile_definitions(ppo_config PRIVATE MLH_PLUGIN_NAME="${_ppo_config_name}")
