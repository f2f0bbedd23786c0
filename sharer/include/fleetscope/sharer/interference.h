#pragma once
// Interference model: the predicted slowdown of a job that shares a GPU.
//
// Lanes run in parallel. A job with utilization u (share of time it keeps the GPU busy alone)
// sharing a GPU whose lanes demand U in total (its own lane included):
//   slowdown = max(1, U) * (1 + alpha * (U - u_lane))
// max(1, U): once the GPU is oversubscribed, everyone is stretched proportionally (time slicing);
// alpha: extra contention for memory bandwidth and caches per unit of a neighbour's load, 0.1 by
// default and fitted by least squares when measured co-location runs exist.
// Inside one lane jobs take turns, one iteration at a time; their GPU phases serialise while host
// phases (input pipeline, Python) overlap, so job i in lane L slows by
//   max(1, sum_{j in L} u_j t_j / t_i).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fleetscope::sharer {

struct ColocationObservation {
  double own_utilization = 0;     // u of the measured job alone
  double others_utilization = 0;  // sum of the neighbours' u
  double measured_slowdown = 1;   // iteration time shared / alone
};

struct InterferenceModel {
  double alpha = 0.1;

  // `lane_demand` is the job's own lane demand, `gpu_demand` the sum over all lanes on the GPU.
  double parallel_slowdown(double lane_demand, double gpu_demand) const;
};

// Fits alpha to measured co-location runs; returns `prior` when there is nothing to fit.
InterferenceModel calibrate_interference(const std::vector<ColocationObservation>& runs,
                                         InterferenceModel prior = InterferenceModel{});

struct LaneMember {
  double utilization = 0;
  double iteration_s = 0;
};
// Slowdown of members[index] from taking turns with the rest of its lane.
double time_sharing_slowdown(const std::vector<LaneMember>& members, size_t index);

}  // namespace fleetscope::sharer
