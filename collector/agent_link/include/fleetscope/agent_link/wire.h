// Apache Thrift's binary protocol (strict, versioned messages) and framed transport, written by
// hand for the agent's side of the agent link. Why not libthrift: the agent is an injection
// library that must add no shared-library dependency to the job, and Debian's libthrift.a is not
// position-independent (TOutput.o has R_X86_64_PC32 relocations against stderr), so it cannot be
// linked into a shared object. The daemon serves the link with real Thrift (the generated
// FleetscopeAgentLink processor), so every byte this codec writes is checked by Thrift's own
// decoder in the tests. Encoding per the Thrift binary protocol specification
// (doc/specs/thrift-binary-protocol.md in the Thrift sources): big-endian integers, strings and
// binaries as i32 length + bytes, fields as type byte + i16 id, structs ended by a stop byte, lists
// as element type + i32 count; frames as an i32 length + payload (thrift-rpc.md, framed transport).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fleetscope::agent_link::wire {

enum Type : uint8_t {
  kStop = 0,
  kBool = 2,
  kByte = 3,
  kDouble = 4,
  kI16 = 6,
  kI32 = 8,
  kI64 = 10,
  kString = 11,
  kStruct = 12,
  kMap = 13,
  kSet = 14,
  kList = 15
};
enum MessageType : uint8_t { kCall = 1, kReply = 2, kException = 3, kOneway = 4 };

// Malformed or truncated input (the peer is not speaking the protocol).
struct WireError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Writer {
 public:
  void i8(int8_t v) { out_.push_back(static_cast<char>(v)); }
  void i16(int16_t v) { be(static_cast<uint16_t>(v), 2); }
  void i32(int32_t v) { be(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { be(static_cast<uint64_t>(v), 8); }
  void f64(double v) {  // IEEE 754 bits, big-endian
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    be(bits, 8);
  }
  void str(std::string_view v) {
    i32(static_cast<int32_t>(v.size()));
    out_.append(v);
  }
  void raw(std::string_view bytes) { out_.append(bytes); }
  void field(Type type, int16_t id) {
    i8(static_cast<int8_t>(type));
    i16(id);
  }
  void stop() { i8(kStop); }
  void list(Type element, int32_t count) {
    i8(static_cast<int8_t>(element));
    i32(count);
  }
  void message(std::string_view name, MessageType type, int32_t seqid) {
    i32(static_cast<int32_t>(0x80010000u | type));  // VERSION_1 | type
    str(name);
    i32(seqid);
  }
  // Field helpers: required values, and optional ones that are written only when set.
  void i32_field(int16_t id, int32_t v) { field(kI32, id), i32(v); }
  void i64_field(int16_t id, int64_t v) { field(kI64, id), i64(v); }
  void double_field(int16_t id, double v) { field(kDouble, id), f64(v); }
  void bool_field(int16_t id, bool v) { field(kBool, id), i8(v ? 1 : 0); }
  void str_field(int16_t id, std::string_view v) { field(kString, id), str(v); }
  template <class T>
  void i32_field(int16_t id, const std::optional<T>& v) {
    if (v) i32_field(id, static_cast<int32_t>(*v));
  }
  template <class T>
  void i64_field(int16_t id, const std::optional<T>& v) {
    if (v) i64_field(id, static_cast<int64_t>(*v));
  }
  void double_field(int16_t id, const std::optional<double>& v) {
    if (v) double_field(id, *v);
  }
  void optional_str_field(int16_t id, const std::optional<std::string>& v) {
    if (v) str_field(id, *v);
  }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }
  size_t size() const { return out_.size(); }
  void clear() { out_.clear(); }

 private:
  void be(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  int8_t i8() { return static_cast<int8_t>(take(1)[0]); }
  int16_t i16() { return static_cast<int16_t>(be(2)); }
  int32_t i32() { return static_cast<int32_t>(be(4)); }
  int64_t i64() { return static_cast<int64_t>(be(8)); }
  std::string str() {
    int32_t n = i32();
    if (n < 0) throw WireError("negative string length");
    return std::string(take(static_cast<size_t>(n)), static_cast<size_t>(n));
  }
  // Next field's type and id; type kStop ends the struct.
  Type field(int16_t& id) {
    auto type = static_cast<Type>(i8());
    id = type == kStop ? 0 : i16();
    return type;
  }
  void message(std::string& name, MessageType& type, int32_t& seqid) {
    uint32_t version = static_cast<uint32_t>(i32());
    if ((version & 0xffff0000u) != 0x80010000u)
      throw WireError("not a strict binary-protocol message");
    type = static_cast<MessageType>(version & 0xff);
    name = str();
    seqid = i32();
  }
  void skip(Type type, int depth = 0);
  bool done() const { return p_ == end_; }

 private:
  const char* take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) throw WireError("truncated message");
    const char* at = p_;
    p_ += n;
    return at;
  }
  uint64_t be(int n) {
    const char* at = take(static_cast<size_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(at[i]);
    return v;
  }
  const char* p_;
  const char* end_;
};

}  // namespace fleetscope::agent_link::wire
