// The agent's own definitions of the two glibc symbols newer than 2.34 that the statically linked
// runtime libraries reference, so that the library loads wherever a CUDA 13 driver runs (a test
// reads the version needs of the built library: AgentLibrary.NeedsNoGlibcNewerThan2_34).
//
// arc4random (GLIBC_2.36): libstdc++.a's std::random_device, dragged in by its COW-string
// instantiations even though the agent never constructs one (Ubuntu 22.04 has glibc 2.35). Defined
// here on getrandom (2.25). _dl_find_object (GLIBC_2.35): libgcc's unwinder, linked statically into
// the agent (-static-libgcc), finds the unwind tables of a code address with _dl_find_object when
// libgcc was built against glibc 2.35 or later (GCC 12's unwind-dw2-fde-dispatch.c). That symbol is
// versioned GLIBC_2.35, which RHEL 9 based images (glibc 2.34) do not have, and the library would
// fail to load there. A definition inside the agent wins over libc's at link time; the version
// script keeps it local, so the host process and its other libraries still use glibc's. It computes
// the same answer from dl_iterate_phdr (glibc 2.2.5), the way libgcc found unwind tables
// before 2.35. The unwinder only reads dlfo_eh_frame (and dlfo_eh_dbase where the ABI has one), but
// every field is filled in.
#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>

#include <cstdint>
#include <cstring>
#include <ctime>

extern "C" uint32_t arc4random() noexcept {
  uint32_t value = 0;
  if (getrandom(&value, sizeof value, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof value)) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    value = static_cast<uint32_t>(now.tv_nsec) ^ static_cast<uint32_t>(now.tv_sec * 2654435761u);
  }
  return value;
}

#ifdef DLFO_STRUCT_HAS_EH_DBASE  // glibc >= 2.35 headers declare struct dl_find_object

namespace {

struct Search {
  uintptr_t pc = 0;
  dl_find_object* result = nullptr;
  bool found = false;
};

int visit(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* search = static_cast<Search*>(data);
  uintptr_t low = UINTPTR_MAX, high = 0;
  bool contains = false;
  const ElfW(Phdr)* eh_frame = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type == PT_GNU_EH_FRAME) eh_frame = &segment;
    if (segment.p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    uintptr_t end = start + segment.p_memsz;
    if (start < low) low = start;
    if (end > high) high = end;
    if (search->pc >= start && search->pc < end) contains = true;
  }
  if (!contains) return 0;
  dl_find_object* out = search->result;
  std::memset(out, 0, sizeof *out);
  out->dlfo_map_start = reinterpret_cast<void*>(low);
  out->dlfo_map_end = reinterpret_cast<void*>(high);
  out->dlfo_eh_frame =
      eh_frame ? reinterpret_cast<void*>(info->dlpi_addr + eh_frame->p_vaddr) : nullptr;
  search->found = true;
  return 1;  // stop iterating
}

}  // namespace

extern "C" int _dl_find_object(void* pc, dl_find_object* result) noexcept {
  Search search;
  search.pc = reinterpret_cast<uintptr_t>(pc);
  search.result = result;
  dl_iterate_phdr(visit, &search);
  if (!search.found) return -1;
  // The link map, for callers that want it (dladdr1 is glibc 2.3.3).
  Dl_info info{};
  void* map = nullptr;
  if (dladdr1(pc, &info, &map, RTLD_DL_LINKMAP) != 0)
    result->dlfo_link_map = static_cast<link_map*>(map);
  return 0;
}

#endif
