#include "fleetscope/agent_link/wire.h"

namespace fleetscope::agent_link::wire {

void Reader::skip(Type type, int depth) {
  if (depth > 32) throw WireError("nesting too deep");
  switch (type) {
    case kBool:
    case kByte:
      i8();
      return;
    case kI16:
      i16();
      return;
    case kI32:
      i32();
      return;
    case kDouble:
    case kI64:
      i64();
      return;
    case kString:
      str();
      return;
    case kStruct: {
      int16_t id = 0;
      for (Type t = field(id); t != kStop; t = field(id)) skip(t, depth + 1);
      return;
    }
    case kMap: {
      auto key = static_cast<Type>(i8()), value = static_cast<Type>(i8());
      int32_t n = i32();
      if (n < 0) throw WireError("negative map size");
      for (int32_t i = 0; i < n; ++i) skip(key, depth + 1), skip(value, depth + 1);
      return;
    }
    case kSet:
    case kList: {
      auto element = static_cast<Type>(i8());
      int32_t n = i32();
      if (n < 0) throw WireError("negative list size");
      for (int32_t i = 0; i < n; ++i) skip(element, depth + 1);
      return;
    }
    default:
      throw WireError("unknown field type " + std::to_string(static_cast<int>(type)));
  }
}

}  // namespace fleetscope::agent_link::wire
