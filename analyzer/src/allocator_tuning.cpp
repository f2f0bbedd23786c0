#include "fleetscope/analyzer/allocator_tuning.h"

#include <limits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fleetscope::analyzer {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // mallopt(3): M_MMAP_MAX 0 = never mmap a block; M_TRIM_THRESHOLD = keep up to this much free
  // memory at the top of the heap instead of returning it (the largest value it takes).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

}  // namespace fleetscope::analyzer
