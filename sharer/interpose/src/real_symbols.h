#pragma once
// Finding the real driver and NVML entry points behind the wrappers.
//
// A job reaches the driver three ways (facts learnt from HAMi-core's src/libvgpu.c and
// src/cuda/hook.c, github.com/Project-HAMi/HAMi-core; the code here is our own):
//  1. linked against libcuda.so.1: the preloaded library's exported cuMemAlloc_v2 etc. win symbol
//     resolution, and the real ones are found with dlsym(RTLD_NEXT, ...);
//  2. dlopen("libcuda.so.1") + dlsym(handle, "cuMemAlloc_v2"): dlsym itself is interposed, and
//     answers with the wrapper for the names we wrap (remembering the real address);
//  3. the CUDA runtime (12 and later): dlsym(handle, "cuGetProcAddress_v2"), then every entry
//     point through cuGetProcAddress_v2(base name, version, flags): the wrapper asks the real
//     driver, then swaps in our wrapper for the names we wrap.
// The interposed dlsym must pass RTLD_NEXT lookups on with the *caller's* return address (glibc
// resolves RTLD_NEXT relative to it), so dlsym's entry is a few instructions of assembly
// (dlsym_entry.S) that tail-jump to libc's dlsym for RTLD_NEXT and to the C++ dispatch otherwise.

namespace fleetscope::interpose {

using DlsymFunction = void* (*)(void*, const char*);

// libc's dlsym (found with dlvsym, which is not interposed).
DlsymFunction libc_dlsym();

// The real entry point `name` of the CUDA driver / NVML: from the handle the job opened the
// library with, else the next definition after this library, else the already-loaded library.
void* real_cuda_symbol(const char* name);
void* real_nvml_symbol(const char* name);

// The NVTX loader looked up `real_init` (another tool's InitializeInjectionNvtx2): remembers it and
// returns our own init, which runs it first and then wraps the range slots (nvtx_hooks.cpp).
void* chain_nvtx_injection(void* real_init);

}  // namespace fleetscope::interpose

extern "C" {
// Used by dlsym_entry.S: the cached libc dlsym and its resolver.
__attribute__((visibility("hidden"))) extern void* fleetscope_lanes_next_dlsym;
__attribute__((visibility("hidden"))) void* fleetscope_lanes_resolve_next_dlsym();
__attribute__((visibility("hidden"))) void* fleetscope_lanes_dlsym_dispatch(void* handle,
                                                                            const char* symbol);
}
