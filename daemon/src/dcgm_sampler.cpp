#include "fleetscope/daemon/dcgm_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>

namespace fleetscope::daemon {
namespace {

// DCGM's C API as its public headers declare it (NVIDIA/DCGM, dcgmlib/dcgm_agent.h,
// dcgm_structs.h, dcgm_fields.h; the same in DCGM 3.x and 4.x): only what this file uses.
using dcgmReturn_t = int;
using dcgmHandle_t = uintptr_t;
using dcgmGpuGrp_t = uintptr_t;
using dcgmFieldGrp_t = uintptr_t;
constexpr dcgmReturn_t DCGM_ST_OK = 0;
constexpr int DCGM_OPERATION_MODE_AUTO = 1;  // dcgmOperationMode_t
constexpr int DCGM_GROUP_EMPTY = 1;          // dcgmGroupType_t
constexpr int DCGM_MAX_NUM_DEVICES = 32;     // DCGM >= 2.0
constexpr unsigned short DCGM_FT_DOUBLE = 'd', DCGM_FT_INT64 = 'i';
constexpr double DCGM_FP64_BLANK = 140737488355328.0;  // values >= this are blank/not supported
constexpr int64_t DCGM_INT64_BLANK = 0x7ffffffffffffff0LL;
constexpr int DCGM_MAX_STR_LENGTH = 256, DCGM_MAX_BLOB_LENGTH = 4096;
struct dcgmFieldValue_v1 {
  unsigned int version;
  unsigned short fieldId;
  unsigned short fieldType;
  int status;
  int64_t ts;  // µs since 1970
  union {
    int64_t i64;
    double dbl;
    char str[DCGM_MAX_STR_LENGTH];
    char blob[DCGM_MAX_BLOB_LENGTH];
  } value;
};
using dcgmFieldValueEnumeration_f = int (*)(unsigned int gpuId, dcgmFieldValue_v1* values,
                                            int numValues, void* userData);

std::optional<double> value_of(const dcgmFieldValue_v1& v) {
  if (v.status != DCGM_ST_OK) return std::nullopt;
  if (v.fieldType == DCGM_FT_DOUBLE && v.value.dbl < DCGM_FP64_BLANK) return v.value.dbl;
  if (v.fieldType == DCGM_FT_INT64 && v.value.i64 < DCGM_INT64_BLANK)
    return static_cast<double>(v.value.i64);
  return std::nullopt;
}

int collect(unsigned int gpu, dcgmFieldValue_v1* values, int count, void* user) {
  auto& readings = *static_cast<std::map<int, ProfilingReading>*>(user);
  auto& r = readings[static_cast<int>(gpu)];
  r.gpu = static_cast<int>(gpu);
  for (int i = 0; i < count; ++i) {
    auto value = value_of(values[i]);
    if (values[i].fieldId == kDcgmSmActive) r.sm_active = value;
    if (values[i].fieldId == kDcgmSmOccupancy) r.sm_occupancy = value;
    if (values[i].fieldId == kDcgmTensorActive) r.tensor_active = value;
  }
  return 0;
}

}  // namespace

struct DcgmSampler::Api {
  dcgmReturn_t (*init)();
  dcgmReturn_t (*shutdown)();
  const char* (*error_string)(dcgmReturn_t);
  dcgmReturn_t (*start_embedded)(int, dcgmHandle_t*);
  dcgmReturn_t (*stop_embedded)(dcgmHandle_t);
  dcgmReturn_t (*connect)(const char*, dcgmHandle_t*);
  dcgmReturn_t (*disconnect)(dcgmHandle_t);
  dcgmReturn_t (*supported_devices)(dcgmHandle_t, unsigned int*, int*);
  dcgmReturn_t (*group_create)(dcgmHandle_t, int, const char*, dcgmGpuGrp_t*);
  dcgmReturn_t (*group_add_device)(dcgmHandle_t, dcgmGpuGrp_t, unsigned int);
  dcgmReturn_t (*group_destroy)(dcgmHandle_t, dcgmGpuGrp_t);
  dcgmReturn_t (*field_group_create)(dcgmHandle_t, int, unsigned short*, const char*,
                                     dcgmFieldGrp_t*);
  dcgmReturn_t (*field_group_destroy)(dcgmHandle_t, dcgmFieldGrp_t);
  dcgmReturn_t (*watch_fields)(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t, long long, double, int);
  dcgmReturn_t (*unwatch_fields)(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t);
  dcgmReturn_t (*update_all_fields)(dcgmHandle_t, int);
  dcgmReturn_t (*latest_values)(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t,
                                dcgmFieldValueEnumeration_f, void*);

  std::string why(dcgmReturn_t rc) const {
    const char* text = error_string ? error_string(rc) : nullptr;
    return (text ? std::string(text) : "error") + " (" + std::to_string(rc) + ")";
  }
};

DcgmSampler::DcgmSampler(const std::string& library, const std::string& hostengine,
                         int64_t update_interval_ms)
    : embedded_(hostengine.empty()),
      update_interval_us_(std::max<int64_t>(update_interval_ms, 100) * 1000) {
  const std::vector<std::string> candidates =
      library.empty() ? std::vector<std::string>{"libdcgm.so.4", "libdcgm.so.3", "libdcgm.so"}
                      : std::vector<std::string>{library};
  std::string failures;
  for (const auto& name : candidates) {
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      library_ = name;
      break;
    }
    const char* why = dlerror();
    failures += (failures.empty() ? "" : "; ") + std::string(why ? why : name);
  }
  if (!handle_) {
    note_ = "DCGM profiling fields are off: no libdcgm (" + failures + ")";
    return;
  }
  api_ = std::make_unique<Api>();
  std::string missing;
  auto bind = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle_, symbol));
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  bind(api_->init, "dcgmInit");
  bind(api_->shutdown, "dcgmShutdown");
  bind(api_->error_string, "errorString");
  bind(api_->start_embedded, "dcgmStartEmbedded");
  bind(api_->stop_embedded, "dcgmStopEmbedded");
  bind(api_->connect, "dcgmConnect");
  bind(api_->disconnect, "dcgmDisconnect");
  bind(api_->supported_devices, "dcgmGetAllSupportedDevices");
  bind(api_->group_create, "dcgmGroupCreate");
  bind(api_->group_add_device, "dcgmGroupAddDevice");
  bind(api_->group_destroy, "dcgmGroupDestroy");
  bind(api_->field_group_create, "dcgmFieldGroupCreate");
  bind(api_->field_group_destroy, "dcgmFieldGroupDestroy");
  bind(api_->watch_fields, "dcgmWatchFields");
  bind(api_->unwatch_fields, "dcgmUnwatchFields");
  bind(api_->update_all_fields, "dcgmUpdateAllFields");
  bind(api_->latest_values, "dcgmGetLatestValues");
  if (!missing.empty()) {
    note_ = "DCGM profiling fields are off: " + library_ + " lacks " + missing;
    return;
  }
  if (dcgmReturn_t rc = api_->init(); rc != DCGM_ST_OK) {
    note_ = "DCGM profiling fields are off: dcgmInit failed: " + api_->why(rc);
    return;
  }
  auto fail = [&](const std::string& what) {
    note_ = "DCGM profiling fields are off: " + what;
    if (dcgm_ && embedded_) api_->stop_embedded(dcgm_);
    if (dcgm_ && !embedded_) api_->disconnect(dcgm_);
    dcgm_ = 0;
    api_->shutdown();
  };
  dcgmReturn_t rc = embedded_ ? api_->start_embedded(DCGM_OPERATION_MODE_AUTO, &dcgm_)
                              : api_->connect(hostengine.c_str(), &dcgm_);
  if (rc != DCGM_ST_OK) {
    dcgm_ = 0;
    {
      fail(embedded_ ? "dcgmStartEmbedded failed: " + api_->why(rc)
                     : "dcgmConnect(" + hostengine + ") failed: " + api_->why(rc));
      return;
    }
  }
  unsigned int ids[DCGM_MAX_NUM_DEVICES] = {};
  int count = 0;
  if ((rc = api_->supported_devices(dcgm_, ids, &count)) != DCGM_ST_OK) {
    fail("dcgmGetAllSupportedDevices failed: " + api_->why(rc));
    return;
  }
  if (count <= 0) {
    fail("DCGM supports none of this host's GPUs");
    return;
  }
  unsigned short fields[] = {kDcgmSmActive, kDcgmSmOccupancy, kDcgmTensorActive};
  if ((rc = api_->field_group_create(dcgm_, 3, fields, "fleetscope_profiling", &field_group_)) !=
      DCGM_ST_OK) {
    fail("dcgmFieldGroupCreate failed: " + api_->why(rc));
    return;
  }
  for (int i = 0; i < std::min(count, DCGM_MAX_NUM_DEVICES); ++i) {
    dcgmGpuGrp_t group = 0;
    std::string name = "fleetscope_gpu" + std::to_string(ids[i]);
    if ((rc = api_->group_create(dcgm_, DCGM_GROUP_EMPTY, name.c_str(), &group)) != DCGM_ST_OK ||
        (rc = api_->group_add_device(dcgm_, group, ids[i])) != DCGM_ST_OK) {
      fail("cannot make a DCGM group of GPU " + std::to_string(ids[i]) + ": " + api_->why(rc));
      return;
    }
    gpus_.push_back(static_cast<int>(ids[i]));
    groups_.push_back(group);
  }
  std::string unwatched;
  for (size_t i = 0; i < groups_.size(); ++i)
    if (!watch(i)) unwatched += (unwatched.empty() ? "" : ", ") + std::to_string(gpus_[i]);
  available_ = true;
  if (!unwatched.empty())
    note_ = "DCGM profiling fields could not be watched on GPU(s) " + unwatched +
            " (another profiler, or a GPU without them)";
}

bool DcgmSampler::watch(size_t index) {
  // DCGM keeps a few update periods of samples; only the latest is read.
  const double keep_s = std::max(5.0, 3.0 * static_cast<double>(update_interval_us_) / 1e6);
  return api_->watch_fields(dcgm_, groups_[index], field_group_, update_interval_us_, keep_s, 0) ==
         DCGM_ST_OK;
}

DcgmSampler::~DcgmSampler() {
  if (available_) {
    for (size_t i = 0; i < groups_.size(); ++i) {
      if (!paused_.count(gpus_[i])) api_->unwatch_fields(dcgm_, groups_[i], field_group_);
      api_->group_destroy(dcgm_, groups_[i]);
    }
    api_->field_group_destroy(dcgm_, field_group_);
    if (embedded_)
      api_->stop_embedded(dcgm_);
    else
      api_->disconnect(dcgm_);
    api_->shutdown();
  }
  if (handle_) dlclose(handle_);
}

void DcgmSampler::set_paused(const std::set<int>& gpus) {
  if (!available_) return;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const int gpu = gpus_[i];
    const bool pause = gpus.count(gpu) > 0, paused = paused_.count(gpu) > 0;
    if (pause && !paused) {
      api_->unwatch_fields(dcgm_, groups_[i], field_group_);
      paused_.insert(gpu);
    } else if (!pause && paused) {
      watch(i);
      paused_.erase(gpu);
    }
  }
}

std::vector<ProfilingReading> DcgmSampler::sample() {
  std::vector<ProfilingReading> out;
  if (!available_) return out;
  // AUTO mode updates the fields on its own; this asks for a cycle now without waiting for it.
  api_->update_all_fields(dcgm_, 0);
  std::map<int, ProfilingReading> readings;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (paused_.count(gpus_[i])) continue;
    api_->latest_values(dcgm_, groups_[i], field_group_, collect, &readings);
  }
  for (auto& [gpu, r] : readings)
    if (r.sm_active || r.sm_occupancy || r.tensor_active) out.push_back(r);
  return out;
}

}  // namespace fleetscope::daemon
