# Detects the CUDA toolkit at /usr/local/cuda (or CUDA_HOME). Sets FLEETSCOPE_HAVE_CUDA,
# FLEETSCOPE_CUDA_ROOT and the imported target fleetscope::cupti_headers (headers only: the agent
# resolves libcupti at run time, the tests only need the struct layouts).
set(FLEETSCOPE_CUDA_ROOT "$ENV{CUDA_HOME}")
if(NOT FLEETSCOPE_CUDA_ROOT)
  set(FLEETSCOPE_CUDA_ROOT /usr/local/cuda)
endif()
set(FLEETSCOPE_HAVE_CUDA OFF)
if(EXISTS "${FLEETSCOPE_CUDA_ROOT}/include/cupti_activity.h" AND EXISTS "${FLEETSCOPE_CUDA_ROOT}/include/cuda.h")
  set(FLEETSCOPE_HAVE_CUDA ON)
  find_library(FLEETSCOPE_CUPTI_LIB cupti PATHS ${FLEETSCOPE_CUDA_ROOT}/lib64 ${FLEETSCOPE_CUDA_ROOT}/lib
    ${FLEETSCOPE_CUDA_ROOT}/extras/CUPTI/lib64 NO_DEFAULT_PATH)
  add_library(fleetscope_cupti_headers INTERFACE)
  add_library(fleetscope::cupti_headers ALIAS fleetscope_cupti_headers)
  target_include_directories(fleetscope_cupti_headers SYSTEM INTERFACE ${FLEETSCOPE_CUDA_ROOT}/include)
  set(FLEETSCOPE_NVCC "${FLEETSCOPE_CUDA_ROOT}/bin/nvcc")
  message(STATUS "fleetscope: CUDA toolkit found at ${FLEETSCOPE_CUDA_ROOT} (CUPTI: ${FLEETSCOPE_CUPTI_LIB}); building the agent and samples")
else()
  message(STATUS "fleetscope: no CUDA toolkit at ${FLEETSCOPE_CUDA_ROOT}; skipping the agent, CUPTI tests and samples")
endif()
