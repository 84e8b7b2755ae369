# DDPSCOPE_CUDA: AUTO builds the GPU path when CMake finds nvcc, ON requires it, OFF leaves
# it out. Either way src/gpu/ gives visible_gpus(); without CUDA it says how to get a build.
# Sets DDPSCOPE_WITH_CUDA (ON/OFF) for the tests and the installed package.
set(DDPSCOPE_WITH_CUDA OFF)
if(NOT DDPSCOPE_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "DDPSCOPE_CUDA is '${DDPSCOPE_CUDA}'; expected AUTO, ON or OFF")
endif()
if(NOT DDPSCOPE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(DDPSCOPE_WITH_CUDA ON)
  elseif(DDPSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR
      "DDPSCOPE_CUDA is ON, but CMake found no CUDA compiler (nvcc). Install the CUDA toolkit so that "
      "nvcc is on PATH, or give -DCMAKE_CUDA_COMPILER=/path/to/nvcc -DCUDAToolkit_ROOT=/path/to/cuda; "
      "or configure with -DDDPSCOPE_CUDA=OFF (or AUTO) for a CPU-only build")
  else()
    message(STATUS "ddpscope: no CUDA compiler found; building without the GPU path (DDPSCOPE_CUDA=AUTO)")
  endif()
endif()

if(DDPSCOPE_WITH_CUDA)
  # Real code for Ampere (sm_80) and Hopper (sm_90: H100, H200), and sm_90's PTX, which the
  # driver compiles for newer chips.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # C++17 for device code: CMake 3.25 knows no CUDA20 dialect for nvcc 13.
  set_target_properties(ddpscope_core PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
                                                 CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  file(GLOB DDPSCOPE_GPU_SOURCES CONFIGURE_DEPENDS src/gpu/*.cu src/gpu/*_cuda.cpp)
  target_sources(ddpscope_core PRIVATE ${DDPSCOPE_GPU_SOURCES})
  # `ddpscope devices` reports them; "80-real 90-real 90-virtual" (a ';' would split the definition).
  string(REPLACE ";" " " architectures "${CMAKE_CUDA_ARCHITECTURES}")
  set_source_files_properties(src/gpu/visible_gpus_cuda.cpp PROPERTIES
                              COMPILE_DEFINITIONS "DDPSCOPE_CUDA_ARCHITECTURES=\"${architectures}\"")
  # The datasets' generators and the optimizers must make the CPU's bits (data/philox_normal.h,
  # optim/update_rules.h): no fusing left to nvcc.
  set_source_files_properties(src/gpu/normal_rows_gpu.cu src/gpu/dataset_rows_gpu.cu src/gpu/optimizer_step_gpu.cu
                              PROPERTIES COMPILE_OPTIONS --fmad=false)
  # A static cudart: one binary runs with or without a driver (it reports the reason then).
  # cuBLASLt is loaded on first use (gpu/cublaslt_library.h): its headers only, no link.
  target_link_libraries(ddpscope_core PUBLIC CUDA::cudart_static ${CMAKE_DL_LIBS})
  # NCCL (gpu/nccl_library.h): its header at build time (the CUDA toolkit's, or NCCL_ROOT's),
  # its library loaded by a run that averages over it. Without the header, GPU ranks average
  # through host memory and --process-group-backend nccl says why.
  find_path(DDPSCOPE_NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} ENV NCCL_ROOT ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  if(DDPSCOPE_NCCL_INCLUDE_DIR)
    file(GLOB DDPSCOPE_NCCL_SOURCES CONFIGURE_DEPENDS src/gpu/*_nccl.cpp)
    target_include_directories(ddpscope_core PRIVATE ${DDPSCOPE_NCCL_INCLUDE_DIR})
    message(STATUS "ddpscope: NCCL's header in ${DDPSCOPE_NCCL_INCLUDE_DIR}")
  else()
    file(GLOB DDPSCOPE_NCCL_SOURCES CONFIGURE_DEPENDS src/gpu/*_nonccl.cpp)
    message(STATUS "ddpscope: no nccl.h found; GPU ranks will average through host memory")
  endif()
  target_sources(ddpscope_core PRIVATE ${DDPSCOPE_NCCL_SOURCES})
  message(STATUS "ddpscope: building the GPU path with CUDA ${CUDAToolkit_VERSION} for ${CMAKE_CUDA_ARCHITECTURES}")
else()
  file(GLOB DDPSCOPE_GPU_SOURCES CONFIGURE_DEPENDS src/gpu/*_nocuda.cpp src/gpu/*_nonccl.cpp)
  target_sources(ddpscope_core PRIVATE ${DDPSCOPE_GPU_SOURCES})
endif()
# The sources shared by every build (neither *_[no]cuda.cpp, *_[no]nccl.cpp nor .cu).
file(GLOB DDPSCOPE_GPU_COMMON CONFIGURE_DEPENDS src/gpu/*.cpp)
list(FILTER DDPSCOPE_GPU_COMMON EXCLUDE REGEX "_(no)?(cuda|nccl)\\.cpp$")
target_sources(ddpscope_core PRIVATE ${DDPSCOPE_GPU_COMMON})
