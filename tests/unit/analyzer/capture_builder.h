// Builds small captures for hand-computed tests, in memory (CaptureData) or as a database
// (store::Writer). Times are in ns; helpers take µs where the cases are written in µs.
#pragma once

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <string>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer::testing {

constexpr int64_t us(int64_t v) {
  return v * 1000;
}

class CaptureBuilder {
 public:
  CaptureBuilder() { data_.capture.id = 1; }
  // A GPU kernel; `call_start`/`call_end` add its cudaLaunchKernel call (correlation linked).
  CaptureBuilder& kernel(int64_t start, int64_t end, int32_t stream = 7,
                         const std::string& name = "gemm", int32_t device = 0,
                         std::optional<std::pair<int64_t, int64_t>> call = std::nullopt,
                         const std::string& api = "cudaLaunchKernel") {
    int64_t corr = call ? next_corr_++ : -1;
    push_gpu(start, end, device, stream, corr, data_.intern(name), GpuEventKind::kernel,
             classify_gpu_work(GpuEventKind::kernel, name), 0, -1, -1, -1);
    if (call) runtime(call->first, call->second, api, corr);
    return *this;
  }
  CaptureBuilder& memcpy(int64_t start, int64_t end, int32_t stream, int32_t copy_kind,
                         int32_t src_kind, int32_t dst_kind, int64_t bytes,
                         std::optional<std::pair<int64_t, int64_t>> call = std::nullopt,
                         const std::string& api = "cudaMemcpyAsync", int32_t device = 0) {
    int64_t corr = call ? next_corr_++ : -1;
    push_gpu(start, end, device, stream, corr,
             data_.intern(memcpy_label(copy_kind, src_kind, dst_kind)), GpuEventKind::memcpy,
             WorkClass::memory, bytes, static_cast<int8_t>(copy_kind),
             static_cast<int8_t>(src_kind), static_cast<int8_t>(dst_kind));
    if (call) runtime(call->first, call->second, api, corr);
    return *this;
  }
  // Launch shape of the last GPU event added (grid blocks, est. occupancy %).
  CaptureBuilder& shape(int64_t grid_blocks, double est_occupancy) {
    auto& g = data_.gpu;
    g.grid_blocks.resize(g.size(), 0);
    g.est_occupancy.resize(g.size(), std::nan(""));
    g.grid_blocks.set(g.size() - 1, grid_blocks);
    g.est_occupancy.set(g.size() - 1, est_occupancy);
    return *this;
  }
  CaptureBuilder& gpu_info(int32_t id, int32_t sm_count) {
    store::GpuInfo info;
    info.id = id;
    info.smCount = sm_count;
    data_.gpus.push_back(info);
    return *this;
  }
  CaptureBuilder& cpu_op(int64_t start, int64_t end, const std::string& name = "aten::add") {
    data_.cpu_ops.push_back({start, end, data_.intern(name), 0});
    return *this;
  }
  CaptureData build() {
    CaptureData out = data_;
    out.gpu.grid_blocks.resize(out.gpu.size(), 0);
    out.gpu.est_occupancy.resize(out.gpu.size(), std::nan(""));
    out.finalize();
    return out;
  }
  CaptureBuilder& runtime(int64_t start, int64_t end, const std::string& api, int64_t corr) {
    data_.runtime.start.push_back(start);
    data_.runtime.end.push_back(end);
    data_.runtime.correlation.push_back(corr);
    data_.runtime.name_id.push_back(data_.intern(api));
    data_.runtime.global_tid.push_back(store::global_tid(100, 100));
    return *this;
  }
  CaptureBuilder& step(int64_t number, int64_t start, int64_t end) {
    store::Iteration it;
    it.captureId = data_.capture.id;
    it.step = number;
    it.start = start;
    it.end = end;
    data_.iterations.push_back(it);
    return *this;
  }
  CaptureBuilder& dataloader(int64_t start, int64_t end) {
    data_.dataloader_ops.push_back(
        {start, end, data_.intern("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
         0});
    return *this;
  }
  CaptureData& raw() { return data_; }

 private:
  void push_gpu(int64_t start, int64_t end, int32_t device, int32_t stream, int64_t corr,
                int64_t name_id, GpuEventKind kind, WorkClass cls, int64_t bytes, int8_t ck,
                int8_t sk, int8_t dk) {
    auto& g = data_.gpu;
    g.start.push_back(start), g.end.push_back(end), g.device.push_back(device);
    g.stream.push_back(stream), g.correlation.push_back(corr), g.global_pid.push_back(-1);
    g.name_id.push_back(name_id), g.kind.push_back(kind), g.work_class.push_back(cls);
    g.bytes.push_back(bytes), g.copy_kind.push_back(ck), g.src_kind.push_back(sk);
    g.dst_kind.push_back(dk);
  }
  CaptureData data_;
  int64_t next_corr_ = 1;
};

// A fresh directory under the test temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("fleetscope-analyzer-" + std::to_string(::getpid()) + "-" + std::to_string(count_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int count_ = 0;
  std::filesystem::path path_;
};

}  // namespace fleetscope::analyzer::testing
