# Profiler (core/profile) tests. Included from tests/CMakeLists.txt.
kwb_add_test(tst_profile_catalog unit SOURCES unit/tst_profile_catalog.cpp LIBS kwbprofile)
kwb_add_test(tst_bottleneck unit SOURCES unit/tst_bottleneck.cpp LIBS kwbprofile)
kwb_add_test(tst_profile_worker unit SOURCES unit/tst_profile_worker.cpp LIBS kwbprofile
  ENV "KWB_WORKER=$<TARGET_FILE:kwb-worker>")
add_dependencies(tst_profile_worker kwb-worker)
kwb_add_test(tst_gpu_profile gpu SOURCES gpu/tst_gpu_profile.cpp LIBS kwbprofile
  ENV "KWB_WORKER=$<TARGET_FILE:kwb-worker>")
add_dependencies(tst_gpu_profile kwb-worker)

# `kwb profile` end to end (no GPU used).
kwb_add_test(tst_profile_cli unit SOURCES unit/tst_profile_cli.cpp
  ENV "KWB_CLI=$<TARGET_FILE:kwb>")
add_dependencies(tst_profile_cli kwb)
