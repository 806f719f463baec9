// The source of tests/CMakeLists.txt's mlh_torch_test_pch target, which exists to compile the
// test programs' precompiled header; it defines nothing.
