#include "fleetscope/analyzer/critical_path.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/queue_length.h"

namespace fleetscope::analyzer {

const char* to_string(CriticalEdgeType type) {
  switch (type) {
    case CriticalEdgeType::operator_kernel:
      return "critical_path_operator";
    case CriticalEdgeType::dependency:
      return "critical_path_dependency";
    case CriticalEdgeType::kernel_launch_delay:
      return "critical_path_kernel_launch_delay";
    case CriticalEdgeType::kernel_kernel_delay:
      return "critical_path_kernel_kernel_delay";
    case CriticalEdgeType::sync_dependency:
      return "critical_path_sync_dependency";
  }
  return "critical_path_operator";
}

namespace {

// HTA CPGraph.BLOCKING_SYNC_CALLS: their exit edge weighs 0 (the wait is not CPU work; the sync
// edge from the GPU carries the path instead).
const char* const kBlockingSyncCalls[] = {"cudaDeviceSynchronize",
                                          "cudaStreamSynchronize",
                                          "cudaEventQuery",
                                          "cudaEventSynchronize",
                                          "cudaMemcpy",
                                          "cudaMemcpyAsync"};

struct Event {
  CriticalEventKind kind = CriticalEventKind::none;
  int64_t index = -1;
  int64_t start = 0, end = 0;
  int start_node = -1, end_node = -1;
  bool blocking = false;
};

struct Node {
  int64_t ts = 0;
  int event = -1;
  bool is_start = false;
};

struct Edge {
  int from = 0, to = 0;
  int64_t weight = 0;
  CriticalEdgeType type = CriticalEdgeType::operator_kernel;
  int attributed = -1;  // event index, -1 for none (dependency, sync, launch edges)
};

class Graph {
 public:
  int add_event(CriticalEventKind kind, int64_t index, int64_t start, int64_t end,
                bool blocking = false) {
    Event e{kind, index, start, end, -1, -1, blocking};
    const int id = static_cast<int>(events_.size());
    e.start_node = add_node({start, id, true});
    e.end_node = add_node({end, id, false});
    events_.push_back(e);
    return id;
  }

  // HTA _add_edge_helper: dependency and sync edges, and `zero_weight`, weigh 0.
  int add_edge(int from, int to, CriticalEdgeType type, bool zero_weight = false) {
    int64_t weight = 0;
    if (!zero_weight && type != CriticalEdgeType::dependency &&
        type != CriticalEdgeType::sync_dependency)
      weight = nodes_[static_cast<size_t>(to)].ts - nodes_[static_cast<size_t>(from)].ts;
    if (weight < 0) {
      weight = 0;
      ++negative_weights_clamped_;
    }
    edges_.push_back({from, to, weight, type, -1});
    out_[static_cast<size_t>(from)].push_back(static_cast<int>(edges_.size() - 1));
    return static_cast<int>(edges_.size() - 1);
  }

  // HTA _attribute_edge: the event an operator/kernel or kernel-kernel edge belongs to.
  void attribute(int edge, int src_parent) {
    Edge& e = edges_[static_cast<size_t>(edge)];
    if (e.type != CriticalEdgeType::operator_kernel &&
        e.type != CriticalEdgeType::kernel_kernel_delay)
      return;
    const Node& src = nodes_[static_cast<size_t>(e.from)];
    const Node& dest = nodes_[static_cast<size_t>(e.to)];
    if (e.type == CriticalEdgeType::kernel_kernel_delay || src.is_start)
      e.attributed = src.event;  // the delay goes to the previous kernel; cases 1, 2
    else if (!dest.is_start)
      e.attributed = dest.event;  // case 3: unwinding the stack
    else
      e.attributed = src_parent;  // case 4: between two children, the parent's time
  }

  std::vector<Event>& events() { return events_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Edge>& edges() const { return edges_; }
  int64_t negative_weights_clamped() const { return negative_weights_clamped_; }

  // The longest path by weight, with each edge's weight scaled by `scale(edge)`; the path as edge
  // ids in order. Empty when the graph has a cycle (the caller reports it).
  template <class Scale>
  std::optional<std::pair<int64_t, std::vector<int>>> longest_path(const Scale& scale) const {
    const size_t n = nodes_.size();
    std::vector<int> in_degree(n, 0);
    for (const Edge& e : edges_) ++in_degree[static_cast<size_t>(e.to)];
    // Kahn's order, sources taken in time order so that ties resolve the same way every run.
    std::vector<int> ready;
    for (size_t v = 0; v < n; ++v)
      if (in_degree[v] == 0) ready.push_back(static_cast<int>(v));
    const auto later = [&](int a, int b) {
      const Node &x = nodes_[static_cast<size_t>(a)], &y = nodes_[static_cast<size_t>(b)];
      return x.ts != y.ts ? x.ts > y.ts : a > b;
    };
    std::make_heap(ready.begin(), ready.end(), later);
    std::vector<int64_t> dist(n, 0);
    std::vector<int> via(n, -1);  // the edge that reached the node on its longest path
    size_t visited = 0;
    int best = -1;
    while (!ready.empty()) {
      std::pop_heap(ready.begin(), ready.end(), later);
      const int v = ready.back();
      ready.pop_back();
      ++visited;
      if (best < 0 || dist[static_cast<size_t>(v)] > dist[static_cast<size_t>(best)]) best = v;
      for (int id : out_[static_cast<size_t>(v)]) {
        const Edge& e = edges_[static_cast<size_t>(id)];
        const int64_t candidate = dist[static_cast<size_t>(v)] + scale(id, e.weight);
        const auto to = static_cast<size_t>(e.to);
        if (via[to] < 0 || candidate > dist[to]) dist[to] = candidate, via[to] = id;
        if (--in_degree[to] == 0) {
          ready.push_back(e.to);
          std::push_heap(ready.begin(), ready.end(), later);
        }
      }
    }
    if (visited != n) return std::nullopt;
    std::vector<int> path;
    for (int v = best; v >= 0 && via[static_cast<size_t>(v)] >= 0;) {
      const int id = via[static_cast<size_t>(v)];
      path.push_back(id);
      v = edges_[static_cast<size_t>(id)].from;
    }
    std::reverse(path.begin(), path.end());
    return std::pair{best < 0 ? int64_t{0} : dist[static_cast<size_t>(best)], std::move(path)};
  }

 private:
  int add_node(Node node) {
    nodes_.push_back(node);
    out_.emplace_back();
    return static_cast<int>(nodes_.size() - 1);
  }

  std::vector<Event> events_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<std::vector<int>> out_;
  int64_t negative_weights_clamped_ = 0;
};

std::unordered_set<int64_t> name_ids(const CaptureData& data, const auto& names) {
  std::unordered_set<int64_t> ids;
  for (const char* name : names)
    if (auto id = data.find_name(name)) ids.insert(*id);
  return ids;
}

// One CPU thread's operators and calls, walked depth first as HTA's call stack
// (_construct_graph_from_call_stack): `events` are graph event ids of the thread.
void add_thread_edges(Graph& graph, std::vector<int> events) {
  auto& all = graph.events();
  std::sort(events.begin(), events.end(), [&](int a, int b) {
    const Event &x = all[static_cast<size_t>(a)], &y = all[static_cast<size_t>(b)];
    if (x.start != y.start) return x.start < y.start;
    if (x.end != y.end) return x.end > y.end;  // the enclosing one first
    // An operator encloses the call it makes when both span the same time.
    return (x.kind == CriticalEventKind::cpu_op) > (y.kind == CriticalEventKind::cpu_op);
  });
  std::vector<int> stack;
  int last_node = -1, last_high_level = -1, last_parent = -1;
  const auto exit_top = [&] {
    const int ev = stack.back();
    stack.pop_back();
    const Event& e = all[static_cast<size_t>(ev)];
    if (last_node >= 0) {
      const int edge =
          graph.add_edge(last_node, e.end_node, CriticalEdgeType::operator_kernel, e.blocking);
      graph.attribute(edge, last_parent);
    }
    if (stack.empty()) {
      last_node = -1;
      last_high_level = e.end_node;
    } else {
      last_node = e.end_node;
      last_parent = stack.back();
    }
  };
  for (int ev : events) {
    const Event& e = all[static_cast<size_t>(ev)];
    while (!stack.empty() && all[static_cast<size_t>(stack.back())].end <= e.start) exit_top();
    if (stack.empty() && last_high_level >= 0)
      graph.add_edge(last_high_level, e.start_node, CriticalEdgeType::dependency);
    if (last_node >= 0) {
      const int edge = graph.add_edge(last_node, e.start_node, CriticalEdgeType::operator_kernel);
      graph.attribute(edge, last_parent);
    }
    last_node = e.start_node;
    last_parent = stack.empty() ? -1 : stack.back();
    stack.push_back(ev);
  }
  while (!stack.empty()) exit_top();
}

std::string event_name(const CaptureData& data, const Event& e) {
  switch (e.kind) {
    case CriticalEventKind::cpu_op:
      return data.name(data.cpu_ops[static_cast<size_t>(e.index)].name_id);
    case CriticalEventKind::runtime:
      return data.name(data.runtime.name_id[static_cast<size_t>(e.index)]);
    case CriticalEventKind::gpu:
      return data.name(data.gpu.name_id[static_cast<size_t>(e.index)]);
    case CriticalEventKind::none:
      break;
  }
  return "";
}

// HTA bound_by() and the finer category of an edge.
std::pair<std::string, std::string> classify(const CaptureData& data, const Edge& edge,
                                             const Event* event) {
  switch (edge.type) {
    case CriticalEdgeType::kernel_kernel_delay:
      return {"gpu_kernel_kernel_overhead", "kernel_gap"};
    case CriticalEdgeType::kernel_launch_delay:
      return {"gpu_kernel_launch_overhead", "launch_delay"};
    case CriticalEdgeType::dependency:
    case CriticalEdgeType::sync_dependency:
      return {"", ""};
    case CriticalEdgeType::operator_kernel:
      break;
  }
  if (!event) return {"cpu_bound", "cpu_op"};  // ROOT: between top-level ops
  switch (event->kind) {
    case CriticalEventKind::cpu_op:
      return {"cpu_bound", "cpu_op"};
    case CriticalEventKind::runtime:
      return {"cpu_bound", "cuda_runtime"};
    case CriticalEventKind::gpu: {
      const auto i = static_cast<size_t>(event->index);
      if (data.gpu.work_class[i] == WorkClass::communication)
        return {"gpu_communication_bound", "communication"};
      return {"gpu_compute_bound", data.gpu.kind[i] == GpuEventKind::kernel ? "kernel" : "copy"};
    }
    case CriticalEventKind::none:
      break;
  }
  return {"cpu_bound", "cpu_op"};
}

}  // namespace

std::vector<SyncWaitLink> sync_wait_links(const CaptureData& data) {
  std::vector<SyncWaitLink> out;
  if (data.sync_waits.empty()) return out;
  const RuntimeCalls& r = data.runtime;
  const GpuEvents& g = data.gpu;
  std::unordered_map<int64_t, int64_t> call_of_correlation;
  for (size_t i = 0; i < r.size(); ++i)
    if (r.correlation[i] >= 0) call_of_correlation.emplace(r.correlation[i], int64_t(i));
  const auto call_of = [&](int64_t correlation) -> int64_t {
    auto it = call_of_correlation.find(correlation);
    return it == call_of_correlation.end() ? -1 : it->second;
  };
  // HTA's launches (_get_cuda_runtime_calls_df): the launch APIs of its runtime query that have a
  // GPU event, by (device, stream) for the recordings and by (thread, stream) for the waits.
  std::unordered_set<int64_t> launch_names;
  for (const auto& api : kQueueLaunchApis)
    if (auto id = data.find_name(api)) launch_names.insert(*id);
  using Launch = std::pair<int64_t, int64_t>;  // call start, GPU event
  std::map<std::pair<int32_t, int32_t>, std::vector<Launch>> by_stream;
  std::map<std::pair<int64_t, int32_t>, std::vector<Launch>> by_thread;
  for (size_t i = 0; i < g.size(); ++i) {
    const int64_t call = data.launch_call_of.empty() ? -1 : data.launch_call_of[i];
    if (call < 0 || !launch_names.count(r.name_id[static_cast<size_t>(call)])) continue;
    const int64_t start = r.start[static_cast<size_t>(call)];
    by_stream[{g.device[i], g.stream[i]}].push_back({start, int64_t(i)});
    by_thread[{r.global_tid[static_cast<size_t>(call)], g.stream[i]}].push_back(
        {start, int64_t(i)});
  }
  const auto by_start = [](const Launch& a, const Launch& b) { return a < b; };
  for (auto& [key, list] : by_stream) std::sort(list.begin(), list.end(), by_start);
  for (auto& [key, list] : by_thread) std::sort(list.begin(), list.end(), by_start);

  const auto record_name = data.find_name("cudaEventRecord");
  const auto stream_wait_name = data.find_name("cudaStreamWaitEvent");
  for (const SyncWait& w : data.sync_waits) {
    SyncWaitLink link;
    link.waiting_call = call_of(w.correlation);
    if (w.kind == SyncWait::Kind::context_sync) {
      out.push_back(link);
      continue;
    }
    // The recording: the last launch on the recorded (device, stream) whose call started no
    // later than the cudaEventRecord call (HTA _get_cuda_event_record_df: cummax of launch ids).
    const int64_t record = call_of(w.record_correlation);
    if (record >= 0 && record_name && r.name_id[static_cast<size_t>(record)] == *record_name &&
        w.record_stream >= 0) {
      auto list = by_stream.find({w.device, w.record_stream});
      if (list != by_stream.end()) {
        const Launch key{r.start[static_cast<size_t>(record)], std::numeric_limits<int64_t>::max()};
        auto after = std::upper_bound(list->second.begin(), list->second.end(), key, by_start);
        if (after != list->second.begin()) link.source_gpu = std::prev(after)->second;
      }
    }
    // The waiting kernel: the first launch on the waiting stream from the cudaStreamWaitEvent
    // call's thread at or after the call (HTA _get_cuda_stream_wait_event_df: reverse cummin).
    if (w.kind == SyncWait::Kind::stream_wait_event && link.waiting_call >= 0 && w.stream >= 0 &&
        stream_wait_name &&
        r.name_id[static_cast<size_t>(link.waiting_call)] == *stream_wait_name) {
      const auto call = static_cast<size_t>(link.waiting_call);
      auto list = by_thread.find({r.global_tid[call], w.stream});
      if (list != by_thread.end()) {
        const Launch key{r.start[call], std::numeric_limits<int64_t>::min()};
        auto next = std::lower_bound(list->second.begin(), list->second.end(), key, by_start);
        if (next != list->second.end()) link.waiting_gpu = next->second;
      }
    }
    out.push_back(link);
  }
  return out;
}

CriticalPath critical_path(const CaptureData& data, const CriticalPathOptions& options) {
  CriticalPath out;
  const auto whole_capture = [&]() -> bool {
    int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
    for (const auto& op : data.cpu_ops)
      if (op.is_operator) first = std::min(first, op.start), last = std::max(last, op.end);
    for (size_t i = 0; i < data.runtime.size(); ++i)
      first = std::min(first, data.runtime.start[i]), last = std::max(last, data.runtime.end[i]);
    if (first > last) return false;
    out.window = {first, last};
    return true;
  };
  if (options.whole_capture) {
    if (!whole_capture()) {
      out.not_computed_reason = "no CPU operators or CUDA runtime calls in the capture";
      return out;
    }
  } else if (options.annotation) {
    std::vector<Interval> matches;
    for (const auto& op : data.cpu_ops)
      if (data.name(op.name_id).find(*options.annotation) != std::string::npos)
        matches.push_back({op.start, op.end});
    std::sort(matches.begin(), matches.end(),
              [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    if (options.instance < 0 || static_cast<size_t>(options.instance) >= matches.size()) {
      out.not_computed_reason = "no instance " + std::to_string(options.instance) +
                                " of a CPU range named like '" + *options.annotation + "' (" +
                                std::to_string(matches.size()) + " found)";
      return out;
    }
    out.window = matches[static_cast<size_t>(options.instance)];
  } else if (!data.iterations.empty()) {
    const store::Iteration* chosen = &data.iterations.front();
    if (options.step) {
      chosen = nullptr;
      for (const auto& it : data.iterations)
        if (it.step == *options.step) chosen = &it;
      if (!chosen) {
        out.not_computed_reason = "no iteration with step " + std::to_string(*options.step);
        return out;
      }
    }
    out.step = chosen->step;
    out.window = {chosen->start, chosen->end};
  } else {
    // HTA's default looks for ProfilerStep and gives up without one; the whole capture, which can
    // be millions of events, is analysed only when asked for.
    out.not_computed_reason =
        "no recorded iteration (HTA analyses one ProfilerStep; the whole capture is analysed only "
        "on request)";
    return out;
  }
  // In the last recorded step? (HTA drops it at load; see the queue lengths below.)
  const bool last_step =
      !data.iterations.empty() && out.window.begin >= data.iterations.back().start;
  const auto in_window = [&](int64_t start, int64_t end) {
    return start >= out.window.begin && start <= out.window.end && end > start;
  };

  Graph graph;
  std::map<int64_t, std::vector<int>> by_thread;
  for (size_t i = 0; i < data.cpu_ops.size(); ++i) {
    const HostRange& op = data.cpu_ops[i];
    if (!op.is_operator || !in_window(op.start, op.end)) continue;
    by_thread[op.global_tid].push_back(
        graph.add_event(CriticalEventKind::cpu_op, static_cast<int64_t>(i), op.start, op.end));
  }
  const auto blocking = name_ids(data, kBlockingSyncCalls);
  std::unordered_map<int64_t, int> event_of_call;  // runtime index -> graph event
  const RuntimeCalls& r = data.runtime;
  for (size_t i = 0; i < r.size(); ++i) {
    if (!in_window(r.start[i], r.end[i])) continue;
    const int ev = graph.add_event(CriticalEventKind::runtime, static_cast<int64_t>(i), r.start[i],
                                   r.end[i], blocking.count(r.name_id[i]) > 0);
    event_of_call[static_cast<int64_t>(i)] = ev;
    by_thread[r.global_tid[i]].push_back(ev);
  }
  if (by_thread.empty()) {
    out.not_computed_reason = "no CPU operators or CUDA runtime calls in the iteration";
    return out;
  }
  for (auto& [tid, events] : by_thread) add_thread_edges(graph, std::move(events));

  // GPU events launched from the iteration, and the waits of its calls; a wait sorts by its end
  // (HTA: a Stream Sync overlaps the work it waits for).
  enum class ItemKind : uint8_t { gpu, gpu_sync, sync_wait };
  struct GpuItem {
    int64_t sort_by;
    ItemKind kind;
    size_t index;
  };
  std::vector<GpuItem> items;
  const GpuEvents& g = data.gpu;
  std::vector<int> gpu_event(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    const int64_t call = data.launch_call_of.empty() ? -1 : data.launch_call_of[i];
    if (call < 0 || !event_of_call.count(call)) continue;
    gpu_event[i] = graph.add_event(CriticalEventKind::gpu, static_cast<int64_t>(i), g.start[i],
                                   std::max(g.start[i], g.end[i]));
    items.push_back({g.start[i], ItemKind::gpu, i});
  }
  // Stream and Context Syncs with a stream; the waits on CUDA events and the Context Syncs
  // without one come from sync_waits (SyncWait).
  const auto stream_sync = data.find_name("Stream Sync"),
             context_sync = data.find_name("Context Sync");
  const GpuSyncs& syncs = data.gpu_syncs;
  for (size_t j = 0; j < syncs.size(); ++j) {
    const int64_t call = j < syncs.call_of.size() ? syncs.call_of[j] : -1;
    const int64_t name = syncs.name_id[j];
    if (call >= 0 && event_of_call.count(call) &&
        ((stream_sync && name == *stream_sync) || (context_sync && name == *context_sync)))
      items.push_back({syncs.end[j], ItemKind::gpu_sync, j});
  }
  const std::vector<SyncWaitLink> links = sync_wait_links(data);
  for (size_t k = 0; k < links.size(); ++k)
    if (event_of_call.count(links[k].waiting_call))
      items.push_back({data.sync_waits[k].end, ItemKind::sync_wait, k});
  std::stable_sort(items.begin(), items.end(),
                   [](const GpuItem& a, const GpuItem& b) { return a.sort_by < b.sort_by; });

  // Queue lengths after each launch and after each GPU event's start (HTA joins its queue length
  // series on the runtime call and on the kernel): launch_delay needs 1 and 0. HTA computes them
  // on its trace without the last step (dropped at load); that changes no earlier value, and for
  // the last step itself the series keeps it (HTA would have nothing to analyse there).
  std::vector<int64_t> queue_at_launch(g.size(), -1), queue_at_start(g.size(), -1);
  for (const QueueLengthSeries& series : queue_length_time_series(data, !last_step))
    for (const QueuePoint& p : series.points) {
      if (p.gpu_event < 0) continue;
      (p.enqueue ? queue_at_launch : queue_at_start)[static_cast<size_t>(p.gpu_event)] =
          p.queue_length;
    }

  auto& events = graph.events();
  const auto add_sync_edge = [&](int from_node, int to_node) {
    graph.add_edge(from_node, to_node, CriticalEdgeType::sync_dependency);
    const Node &from = graph.nodes()[static_cast<size_t>(from_node)],
               &to = graph.nodes()[static_cast<size_t>(to_node)];
    const Event &source = events[static_cast<size_t>(from.event)],
                &target = events[static_cast<size_t>(to.event)];
    out.sync_edges.push_back(
        {source.kind, source.index, from.is_start, target.kind, target.index, to.is_start});
  };

  std::map<std::pair<int32_t, int32_t>, int> last_on_stream;  // (device, stream) -> end node
  std::unordered_map<size_t, int64_t> kernel_sync;  // GPU event -> the GPU event it waits for
  for (const GpuItem& item : items) {
    if (item.kind == ItemKind::gpu_sync) {
      const int call_end =
          events[static_cast<size_t>(event_of_call.at(syncs.call_of[item.index]))].end_node;
      if (stream_sync && syncs.name_id[item.index] == *stream_sync) {
        auto last = last_on_stream.find({syncs.device[item.index], syncs.stream[item.index]});
        if (last != last_on_stream.end()) add_sync_edge(last->second, call_end);
      } else {
        for (const auto& [stream, node] : last_on_stream) add_sync_edge(node, call_end);
      }
      continue;
    }
    if (item.kind == ItemKind::sync_wait) {
      const SyncWaitLink& link = links[item.index];
      const int call_end =
          events[static_cast<size_t>(event_of_call.at(link.waiting_call))].end_node;
      const int source = link.source_gpu < 0 ? -1 : gpu_event[static_cast<size_t>(link.source_gpu)];
      switch (data.sync_waits[item.index].kind) {
        case SyncWait::Kind::context_sync:
          for (const auto& [stream, node] : last_on_stream) add_sync_edge(node, call_end);
          break;
        case SyncWait::Kind::event_sync:
          if (source >= 0) {
            add_sync_edge(events[static_cast<size_t>(source)].end_node, call_end);
            ++out.event_sync_edges;
          } else {
            ++out.event_syncs_without_edge;  // recording or its work not found in the window
          }
          break;
        case SyncWait::Kind::stream_wait_event:
          // HTA schedules the dependency here, in the waits' end order (kernel_sync); the edge
          // goes in when the waiting kernel comes up.
          if (link.source_gpu >= 0 && link.waiting_gpu >= 0)
            kernel_sync[static_cast<size_t>(link.waiting_gpu)] = link.source_gpu;
          else
            ++out.event_syncs_without_edge;
          break;
      }
      continue;
    }
    const size_t i = item.index;
    const Event& kernel = events[static_cast<size_t>(gpu_event[i])];
    const int start_node = kernel.start_node, end_node = kernel.end_node;
    graph.attribute(graph.add_edge(start_node, end_node, CriticalEdgeType::operator_kernel), -1);
    // A Stream Wait Event before this kernel: the event's GPU work must end before it starts.
    std::optional<int64_t> sync_end_ts;
    if (auto waited = kernel_sync.find(i); waited != kernel_sync.end()) {
      const int source = gpu_event[static_cast<size_t>(waited->second)];
      if (source >= 0) {
        const int source_end = events[static_cast<size_t>(source)].end_node;
        add_sync_edge(source_end, start_node);
        ++out.event_sync_edges;
        sync_end_ts = graph.nodes()[static_cast<size_t>(source_end)].ts;
      } else {
        ++out.event_syncs_without_edge;  // the recorded work is outside the window
      }
      kernel_sync.erase(waited);
    }
    const std::pair<int32_t, int32_t> stream{g.device[i], g.stream[i]};
    auto last = last_on_stream.find(stream);
    const Event& call = events[static_cast<size_t>(event_of_call.at(data.launch_call_of[i]))];
    const bool queue_was_empty = queue_at_launch[i] == 1 && queue_at_start[i] == 0;
    if (queue_was_empty &&
        (last == last_on_stream.end() ||
         graph.nodes()[static_cast<size_t>(last->second)].ts < call.start) &&
        (!sync_end_ts || *sync_end_ts < call.start)) {
      graph.add_edge(call.start_node, start_node, CriticalEdgeType::kernel_launch_delay);
    } else if (last != last_on_stream.end() &&
               (!sync_end_ts ||
                *sync_end_ts < graph.nodes()[static_cast<size_t>(last->second)].ts)) {
      graph.attribute(
          graph.add_edge(last->second, start_node, CriticalEdgeType::kernel_kernel_delay), -1);
    }
    last_on_stream[stream] = end_node;
  }

  const auto unscaled = [](int, int64_t weight) { return weight; };
  const auto longest = graph.longest_path(unscaled);
  out.nodes = static_cast<int64_t>(graph.nodes().size());
  out.edges = static_cast<int64_t>(graph.edges().size());
  out.negative_weights_clamped = graph.negative_weights_clamped();
  if (!longest) {
    out.not_computed_reason = "the dependency graph has a cycle (inconsistent timestamps)";
    return out;
  }
  out.computed = true;
  out.length_ns = longest->first;

  std::map<std::string, CriticalPathOp> ops;
  for (int id : longest->second) {
    const Edge& edge = graph.edges()[static_cast<size_t>(id)];
    const Event* event =
        edge.attributed >= 0 ? &events[static_cast<size_t>(edge.attributed)] : nullptr;
    CriticalPathSegment s;
    s.start_ns = graph.nodes()[static_cast<size_t>(edge.from)].ts;
    s.end_ns = graph.nodes()[static_cast<size_t>(edge.to)].ts;
    s.weight_ns = edge.weight;
    s.type = edge.type;
    std::tie(s.bound_by, s.category) = classify(data, edge, event);
    if (event) {
      s.kind = event->kind;
      s.index = event->index;
      s.name = event_name(data, *event);
      if (event->kind == CriticalEventKind::gpu) {
        s.device = g.device[static_cast<size_t>(event->index)];
        s.stream = g.stream[static_cast<size_t>(event->index)];
      } else if (event->kind == CriticalEventKind::cpu_op) {
        s.global_tid = data.cpu_ops[static_cast<size_t>(event->index)].global_tid;
      } else {
        s.global_tid = r.global_tid[static_cast<size_t>(event->index)];
      }
    }
    out.by_edge_type[to_string(edge.type)] += edge.weight;
    if (!s.bound_by.empty()) out.by_bound[s.bound_by] += edge.weight;
    if (!s.category.empty()) out.by_category[s.category] += edge.weight;
    // An op's own time on the path: its span edges (the gap after a kernel, which HTA attributes
    // to it, stays under kernel_gap and is not the kernel's work).
    if (event && edge.weight > 0 && edge.type == CriticalEdgeType::operator_kernel) {
      CriticalPathOp& op = ops[s.name];
      op.name = s.name;
      op.category = s.category;
      op.on_path_ns += edge.weight;
      ++op.segments;
    }
    out.path.push_back(std::move(s));
  }
  for (auto& [name, op] : ops) out.top_ops.push_back(std::move(op));
  std::sort(out.top_ops.begin(), out.top_ops.end(), [](const auto& a, const auto& b) {
    return a.on_path_ns != b.on_path_ns ? a.on_path_ns > b.on_path_ns : a.name < b.name;
  });

  // What-if: every edge attributed to an event of that name (on the path or not) shortened.
  if (out.length_ns > 0) {
    std::vector<std::string> edge_name(graph.edges().size());
    for (size_t id = 0; id < graph.edges().size(); ++id) {
      const int ev = graph.edges()[id].attributed;
      if (ev >= 0 && graph.edges()[id].type == CriticalEdgeType::operator_kernel)
        edge_name[id] = event_name(data, events[static_cast<size_t>(ev)]);
    }
    const double keep = std::clamp(1.0 - options.what_if_faster, 0.0, 1.0);
    for (size_t k = 0; k < out.top_ops.size() && k < options.what_if_ops; ++k) {
      const std::string& name = out.top_ops[k].name;
      const auto faster = graph.longest_path([&](int id, int64_t weight) {
        return edge_name[static_cast<size_t>(id)] == name
                   ? static_cast<int64_t>(static_cast<double>(weight) * keep)
                   : weight;
      });
      if (!faster) continue;
      out.what_if.push_back({name, options.what_if_faster, faster->first,
                             100.0 * static_cast<double>(out.length_ns - faster->first) /
                                 static_cast<double>(out.length_ns)});
    }
  }
  if (out.top_ops.size() > options.top_ops) out.top_ops.resize(options.top_ops);
  return out;
}

nlohmann::json critical_path_json(const CriticalPath& cp, bool with_path) {
  using nlohmann::json;
  json top = json::array();
  for (const auto& op : cp.top_ops)
    top.push_back({{"name", op.name},
                   {"category", op.category},
                   {"on_path_ns", op.on_path_ns},
                   {"share", cp.length_ns ? double(op.on_path_ns) / double(cp.length_ns) : 0.0},
                   {"segments", op.segments}});
  json what_if = json::array();
  for (const auto& w : cp.what_if)
    what_if.push_back({{"name", w.name},
                       {"faster", w.faster},
                       {"new_length_ns", w.new_length_ns},
                       {"path_shorter_pct", w.path_shorter_pct}});
  json out = {{"step", cp.step ? json(*cp.step) : json()},
              {"window_start_ns", cp.window.begin},
              {"window_end_ns", cp.window.end},
              {"length_ns", cp.length_ns},
              {"graph_nodes", cp.nodes},
              {"graph_edges", cp.edges},
              {"path_edges", cp.path.size()},
              {"by_bound_ns", cp.by_bound},
              {"by_category_ns", cp.by_category},
              {"by_edge_type_ns", cp.by_edge_type},
              {"top_ops", std::move(top)},
              {"what_if", std::move(what_if)},
              {"negative_weights_clamped", cp.negative_weights_clamped},
              {"event_sync_edges", cp.event_sync_edges},
              {"event_syncs_without_edge", cp.event_syncs_without_edge}};
  if (with_path) {
    json path = json::array();
    for (const auto& s : cp.path) {
      json edge = {{"start_ns", s.start_ns},
                   {"end_ns", s.end_ns},
                   {"weight_ns", s.weight_ns},
                   {"type", to_string(s.type)},
                   {"bound_by", s.bound_by},
                   {"category", s.category},
                   {"name", s.name}};
      if (s.kind == CriticalEventKind::gpu) {
        edge["device"] = s.device;
        edge["stream"] = s.stream;
      } else if (s.kind != CriticalEventKind::none) {
        edge["global_tid"] = s.global_tid;
      }
      path.push_back(std::move(edge));
    }
    out["path"] = std::move(path);
  }
  return out;
}

}  // namespace fleetscope::analyzer
