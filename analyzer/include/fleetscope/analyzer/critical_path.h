// Critical path of one iteration, as Holistic Trace Analysis defines it (CriticalPathAnalysis,
// hta/analyzers/critical_path_analysis.py, holistictraceanalysis 0.5.0).
//
// The graph: every CPU operator (Kineto cat cpu_op) and CUDA runtime/driver call that starts
// inside the iteration and lasts > 0, and every GPU event (kernel, memcpy, memset) whose launching
// call is one of them, becomes a start node and an end node. Edges, with HTA's names:
//   operator_kernel      on each CPU thread, walking the call stack depth first, from the last
//                        node seen to the next start or end (weight = the time between them: the
//                        op's self time slices); the exit of a blocking call
//                        (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventQuery,
//                        cudaEventSynchronize, cudaMemcpy, cudaMemcpyAsync) weighs 0. For a GPU
//                        event: start -> end (its duration).
//   dependency           from the end of one top-level CPU op to the start of the next (weight 0).
//   kernel_launch_delay  launch call start -> GPU event start, when the stream's queue held only
//                        this event at the launch and was empty when it started
//                        (queue_length.h), and the stream's previous event ended before the launch.
//   kernel_kernel_delay  otherwise, previous event end on the stream -> this start (the gap).
//   sync_dependency      the stream's last GPU event end -> the end of the call that waited on it
//                        (Stream Sync; every stream for Context Sync, with a stream or not:
//                        SyncWait), weight 0. Waits on a
//                        recorded CUDA event (HTA _construct_graph_from_kernels with
//                        _get_cuda_event_record_df and _get_cuda_stream_wait_event_df): the
//                        recorded GPU event is the last launch on the recording's (device,
//                        stream) whose call started no later than the cudaEventRecord call; for
//                        Event Sync its end -> the end of the waiting call (cudaEventSynchronize,
//                        cudaEventQuery); for Stream Wait Event its end -> the start of the first
//                        kernel launched on the waiting stream, from the cudaStreamWaitEvent
//                        call's thread, at or after that call. That kernel then gets a launch or
//                        kernel-kernel edge only when the recorded work ended before the launch
//                        call or the stream's previous event, respectively (HTA's conditions).
// The critical path is the longest path by weight (networkx.dag_longest_path in HTA); its
// breakdown attributes each edge to an event as HTA does (_attribute_edge) and classifies it with
// HTA's bound_by: cpu_bound, gpu_compute_bound, gpu_communication_bound (NCCL kernels),
// gpu_kernel_kernel_overhead, gpu_kernel_launch_overhead.
//
// Differences from HTA, each for a reason:
//   - A wait whose recording the store does not know (eventRecordCorrelationId NULL: Kineto
//     traces without wait_on_cuda_event_record_corr_id, CUPTI without CUDA_EVENT records) adds no
//     edge, as in HTA; one whose recording or waiting kernel is not found, or lies outside the
//     window, is counted in `event_syncs_without_edge`.
//   - GPU streams are keyed by (device, stream); HTA keys by stream within a rank.
//   - Edges that would weigh less than 0 (a child op ending a few ns after its parent in
//     ns-resolution traces) weigh 0, as HTA clamps -1 µs (counted in `negative_weights_clamped`).
//   - Among paths of equal length the one chosen may differ; the length does not.
//
// Beyond HTA: the same time split into finer categories (cpu_op, cuda_runtime, kernel, copy,
// communication, launch_delay, kernel_gap), the ops with most time on the path (their own span
// edges), and a what-if per op: the graph's longest path again with those edges shortened by
// `what_if_faster` (the share of time saved), i.e. "if this op were X % faster, the step's
// critical path would be Y % shorter" — the path may move to other work, so Y can be below X times
// the op's share.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

enum class CriticalEdgeType : uint8_t {
  operator_kernel,
  dependency,
  kernel_launch_delay,
  kernel_kernel_delay,
  sync_dependency
};
const char* to_string(CriticalEdgeType type);  // HTA's CPEdgeType values, "critical_path_operator"

// What an edge on the path is attributed to.
enum class CriticalEventKind : uint8_t { none, cpu_op, runtime, gpu };

struct CriticalPathSegment {
  int64_t start_ns = 0, end_ns = 0;  // the edge's nodes
  int64_t weight_ns = 0;
  CriticalEdgeType type = CriticalEdgeType::operator_kernel;
  CriticalEventKind kind = CriticalEventKind::none;
  int64_t index = -1;                // into cpu_ops, runtime or gpu (by kind)
  std::string bound_by;              // HTA's class, empty for zero-weight dependency/sync edges
  std::string category;              // the finer category (see above), empty for those edges
  std::string name;                  // the attributed event's name
  int64_t global_tid = -1;           // CPU events
  int32_t device = -1, stream = -1;  // GPU events
};

// A sync_dependency edge of the graph (on the path or not), by the events its nodes belong to.
struct CriticalSyncEdge {
  CriticalEventKind from_kind = CriticalEventKind::none;
  int64_t from_index = -1;  // into cpu_ops, runtime or gpu (by kind)
  bool from_start = false;  // the edge leaves the event's start (else its end)
  CriticalEventKind to_kind = CriticalEventKind::none;
  int64_t to_index = -1;
  bool to_start = false;
};

struct CriticalPathOp {
  std::string name;
  std::string category;
  int64_t on_path_ns = 0;
  int64_t segments = 0;
};

struct CriticalPathWhatIf {
  std::string name;
  double faster = 0;            // share of the op's time saved (0.5 = twice as fast)
  int64_t new_length_ns = 0;    // the longest path then
  double path_shorter_pct = 0;  // (length - new_length) / length * 100
};

struct CriticalPath {
  bool computed = false;
  std::string not_computed_reason;  // when !computed
  std::optional<int64_t> step;      // the iteration's step number; nullopt: the whole capture
  Interval window;
  int64_t length_ns = 0;  // Σ weights along the path
  int64_t nodes = 0, edges = 0;
  std::vector<CriticalPathSegment> path;        // in time order
  std::map<std::string, int64_t> by_bound;      // HTA summary(): bound_by -> ns
  std::map<std::string, int64_t> by_category;   // finer split -> ns
  std::map<std::string, int64_t> by_edge_type;  // CPEdgeType value -> ns
  std::vector<CriticalPathOp> top_ops;          // by time on the path
  std::vector<CriticalPathWhatIf> what_if;
  int64_t negative_weights_clamped = 0;
  std::vector<CriticalSyncEdge> sync_edges;  // every sync_dependency edge, in the order added
  int64_t event_sync_edges = 0;              // of those, the ones from waits on CUDA events
  int64_t event_syncs_without_edge = 0;
};

// What each of data.sync_waits joins, resolved as HTA does (see the header comment): indexes into
// data.runtime / data.gpu, -1 when not found.
struct SyncWaitLink {
  int64_t waiting_call = -1;  // the cudaEventSynchronize / cudaStreamWaitEvent / ... call
  int64_t source_gpu = -1;    // event waits: the GPU event the recording follows
  int64_t waiting_gpu = -1;   // Stream Wait Event: the first kernel that waits
};
std::vector<SyncWaitLink> sync_wait_links(const CaptureData& data);  // parallel to sync_waits

// The window analysed, first match wins: the whole capture; HTA's annotation and instance (the
// `instance`-th CPU range, in time order, whose name contains `annotation`, e.g. "ProfilerStep");
// the iteration numbered `step`; else the first iteration (HTA's default, ProfilerStep instance
// 0); without iterations nothing (HTA's default finds no ProfilerStep either).
struct CriticalPathOptions {
  bool whole_capture = false;
  std::optional<std::string> annotation;
  int64_t instance = 0;
  std::optional<int64_t> step;
  double what_if_faster = 0.5;
  size_t top_ops = 10;
  size_t what_if_ops = 5;
};

CriticalPath critical_path(const CaptureData& data, const CriticalPathOptions& options = {});

// `analyze --format json`'s "critical_path" object (docs/analyzer.md): step, window, length_ns,
// graph size, by_bound_ns, by_category_ns, by_edge_type_ns, top_ops, what_if; with `with_path`
// also "path", every edge of it in order. Call only for a computed path.
nlohmann::json critical_path_json(const CriticalPath& path, bool with_path);

}  // namespace fleetscope::analyzer
