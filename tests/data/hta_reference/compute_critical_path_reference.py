#!/usr/bin/env python3
"""Compute Holistic Trace Analysis (HTA) critical-path reference values for the shared traces.

tests/unit/analyzer_hta/critical_path_parity_test.cpp compares fleetscope's critical path
(analyzer/critical_path.h) with what this script writes (hta_reference_critical_path.json). Run it
by hand in a venv with holistictraceanalysis 0.5.0 (see README.md next to this file).

For each trace and iteration: HTA's CriticalPathAnalysis with its defaults (no zero-weight launch
edges), the path's length (sum of edge weights, µs), its node and edge counts, the graph's size and
HTA's summary() (bound_by -> % of the path) with the µs behind each share.
"""

import argparse
import contextlib
import io
import json
import logging
import os
import shutil
import tempfile
import warnings

CASES = [
    # (trace, annotation, instance): the annotations HTA's own tests use on these traces.
    ("hta-critical_path_simple_add_trace.json.gz", "[param|pytorch.model.alex_net|0|0|0|measure|forward]", 1),
    ("hta-critical_path_alexnet_trace.json.gz", "[param|pytorch.model.alex_net|0|0|0|measure|forward]", 1),
    ("hta-critical_path_cuda_event_sync_event_sync_trace.json.gz", "ProfilerStep", 0),
    # No ProfilerStep in this one: "" is HTA's whole-trace window.
    ("hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz", "", 0),
    ("hta-ns_resolution_trace_rank-0.json.gz", "ProfilerStep", 0),
]


def sync_edges(graph):
    """Every critical_path_sync_dependency edge of the graph (on the path or not): the GPU event it
    leaves (its end) and the event it enters, each named by Kineto correlation id and name, and
    whether the edge enters that event's start (a Stream Wait Event's next kernel) or its end (the
    CPU call that waited: Stream/Context/Event Sync). Sorted, for a stable file."""
    from hta.analyzers.critical_path_analysis import CPEdgeType

    df = graph.full_trace_df
    names = graph.symbol_table.sym_table

    def describe(node):
        return {
            "correlation": int(df.correlation.loc[node.ev_idx]),
            "name": names[int(df.name.loc[node.ev_idx])],
            "at": "start" if node.is_start else "end",
        }

    edges = []
    for u, v, data in graph.edges(data=True):
        e = data["object"]
        if e.type != CPEdgeType.SYNC_DEPENDENCY:
            continue
        edges.append({"from": describe(graph.node_list[e.begin]), "to": describe(graph.node_list[e.end])})
    edges.sort(key=lambda x: (x["from"]["correlation"], x["to"]["correlation"], x["to"]["at"]))
    return edges


def analyse(trace_path, annotation, instance):
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(trace_path, os.path.join(tmp, os.path.basename(trace_path)))
        with contextlib.redirect_stdout(io.StringIO()):
            analysis = TraceAnalysis(trace_dir=tmp)
            result = analysis.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
        out = {"annotation": annotation, "instance": instance, "success": bool(result and result[1])}
        if not out["success"]:
            return out
        graph = result[0]
        edges = list(graph.critical_path_edges_set)
        out["path_length_us"] = int(sum(e.weight for e in edges))
        out["path_nodes"] = len(graph.critical_path_nodes)
        out["path_edges"] = len(edges)
        out["graph_nodes"] = graph.number_of_nodes()
        out["graph_edges"] = graph.number_of_edges()
        by_type = {}
        for e in edges:
            by_type[e.type.value] = by_type.get(e.type.value, 0) + int(e.weight)
        out["by_edge_type_us"] = by_type
        breakdown = graph.get_critical_path_breakdown()
        bound = breakdown.groupby("bound_by").duration.sum()
        out["by_bound_us"] = {k: int(v) for k, v in bound.items() if k}
        out["sync_edges"] = sync_edges(graph)
        # The window HTA clipped to (µs, the trace's unit).
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--traces-dir", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    import hta

    result = {
        "hta_version": getattr(hta, "__version__", "0.5.0"),
        "command": "compute_critical_path_reference.py --traces-dir "
        + args.traces_dir + " --output " + args.output,
        "traces": {},
    }
    for trace, annotation, instance in CASES:
        result["traces"][trace] = analyse(os.path.join(args.traces_dir, trace), annotation, instance)
        print(trace, result["traces"][trace])
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
