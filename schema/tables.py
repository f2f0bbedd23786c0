# The trace store's tables, described once. schema/gen_schema.py turns this file into the SQL DDL
# (trace.sql, embedded in the store), docs/schema.md, the row structs and the list of event rows
# (fleetscope/store/tables.h), the ENUM_* tables' values as C++ enums with their labels
# (fleetscope/store/enums.h), the store's per-table insert and read code, the agent link's record
# structs (records.thrift) and both ends of their codec (the agent's encoder, the daemon's
# decoder), and the nsys importer's copy of nsys-named columns (fleetscope/store/nsys_columns.h). Perfetto's trace processor declares its tables the same way (Python descriptions,
# generated C++: src/trace_processor/tables/*.py).
#
# Adding a column: add one C(...) line to its table with `since=` the schema version that adds it
# (the generator bumps kSchemaVersion and writes the ALTER TABLE of the migration), then fill the
# field where rows are made (the CUPTI translator, an importer). Everything else follows.
#
# C(name, sql, doc, **options):
#   name     SQL column name (the nsys export's where the table mirrors one)
#   sql      SQL type and constraints, as in the DDL
#   doc      one line: what the column holds (docs/schema.md, the DDL comment)
#   t        C++ type of the row struct's member: i64, i32, f64, str, bool (an INTEGER 0/1), or an
#            enum type name
#            (no t: the column has no member, e.g. a column only importers of nsys files fill)
#   m        member name when it differs from the column name
#   opt      member is std::optional (default: the column is nullable)
#   default  member initializer (C++ expression)
#   time     read back with the untrusted-time check (an INTEGER ns within +-2^62)
#   intern   the column holds a StringIds id: the member is the string (write side) and `intern`
#            names the int64 member that carries the id on the read side
#   bind     C++ expression bound on insert instead of the member (`r` is the row, `in` the
#            writer's interner)
#   read     C++ expression read instead of the column's plain value (`s` the statement, `i` the
#            column index); read_sql: the SELECT expression instead of the column name
#   wire     field id in the agent link's record struct (schema/fleetscope.thrift RecordBatch);
#            captureId never travels (the daemon decides the capture). wire_opt: an optional field
#            even though the member is not (sent only when non-empty)
#   nsys     False where an nsys-named table carries a column nsys does not have (the nsys importer
#            copies every other column of such a table by name: fleetscope/store/nsys_columns.h)
#   nsys_opt an export may lack the column or leave it NULL although ours is NOT NULL (the importer
#            fills it otherwise)
#   since    schema version that added the column (generates the migration's ALTER TABLE)
#   strid    the INTEGER column holds a StringIds id (implied by `intern`; for columns without `t`)
#
# The Chrome-trace export (collector/export) writes every column of the tables it exports from
# this description (the generated fleetscope/store/table_columns.h), so a new column reaches it
# without a second edit:
#   chrome   the event arg the column becomes (Kineto's name where Kineto writes one; columns that
#            share a name form one array arg, as Kineto's "grid": [x, y, z]). Default: the column
#            name. FIELD: the exporter places it in the event itself (ts, dur, name, cat, pid,
#            tid). False: not exported (the doc or a comment says why).
#   labels   the ENUM_* table whose label the arg shows instead of the number
#
# The daemon's RPC API returns rows of some tables (kernelsInWindow: the kernel table) as a view,
# generated from this description too (struct <Row>Row in records.thrift, the mapping in
# fleetscope/daemon/rpc_views.h):
#   rpc      Rpc(field, name): the column's field in the view. The view is a public API, narrower
#            than the table on purpose: a column without rpc= is not in it, and a new column
#            reaches it by its rpc= alone. Field ids are never renumbered or reused; new fields are
#            optional (required=True only where version 1 of the API had a required field).
#            Columns sharing one field form a list (grid: [x, y, z]), or with sum=True their sum
#            (shared memory: static + dynamic). A StringIds column travels as its text.

SCHEMA_VERSION = 7


class C:
    def __init__(self, name, sql, doc, t=None, m=None, opt=None, default=None, time=False,
                 intern=None, bind=None, read=None, read_sql=None, wire=None, wire_opt=False,
                 nsys=True, nsys_opt=False, since=None, strid=False, chrome=None, labels=None,
                 rpc=None):
        self.name, self.sql, self.doc = name, sql, doc
        self.t, self.m = t, (m or name) if t else None
        self.nullable = "NOT NULL" not in sql and "PRIMARY KEY" not in sql
        self.opt = self.nullable if opt is None else opt
        self.default, self.time, self.intern = default, time, intern
        self.bind, self.read, self.read_sql = bind, read, read_sql
        self.wire, self.wire_opt, self.nsys, self.since = wire, wire_opt, nsys, since
        self.nsys_opt = nsys_opt
        self.strid, self.chrome, self.labels = strid or bool(intern), chrome, labels
        self.rpc = rpc


class Rpc:
    """A column's field in the daemon's RPC view of its table (C's rpc=)."""
    def __init__(self, field, name, required=False, sum=False):
        self.field, self.name, self.required, self.sum = field, name, required, sum


# `chrome=FIELD`: the exporter writes the column as the event's own field, not as an arg.
FIELD = "<field>"


class Table:
    def __init__(self, name, doc, columns, struct=None, plural=None, nsys=False, event=False,
                 constraints=(), after="", wire_batch=None, extent=None, struct_doc=None,
                 upsert=False, chrome=False, since=None):
        self.name, self.doc, self.columns = name, doc, columns
        self.since = since  # schema version that added the table (generates its CREATE in the migration)
        # An event table's rows of one capture are found by capture_row_ranges, except where the table's
        # key begins with captureId (iterations: its upsert replaces rows, its key indexes the capture).
        self.row_ranges = event and not upsert
        self.struct, self.plural, self.nsys, self.event = struct, plural, nsys, event
        self.constraints, self.after, self.wire_batch = constraints, after, wire_batch
        self.extent, self.struct_doc, self.upsert = extent, struct_doc, upsert
        self.chrome = chrome  # the Chrome-trace export writes its rows (every column: see C.chrome)
        self.enum = None  # an ENUM_* table's C++ enum (enum_table)


class Enum:
    """The store's C++ enum of an ENUM_* table (fleetscope/store/enums.h, generated): one constant
    per value, `prefix` + the value's C++ name, and the functions that name a value: `label` (the
    table's label) and `short` (the C++ name, e.g. "HtoD"), where given."""
    def __init__(self, cpp, prefix, label=None, short=None):
        self.cpp, self.prefix, self.label, self.short = cpp, prefix, label, short


def enum_table(name, enum, label_doc, values, cpp):
    """An nsys ENUM_* table: the labels of a CUPTI enum, filled when the file is created, and the
    store's C++ enum of the same values. values: (value, CUPTI constant, label, C++ name)."""
    rows = ",".join(f"\n  ({v},'{n}','{label}')" for v, n, label, _ in values)
    t = Table(name, f"Enum labels (nsys names): {enum}.", [
        C("id", "INTEGER PRIMARY KEY NOT NULL", f"{enum} value"),
        C("name", "TEXT NOT NULL", "enum constant name"),
        C("label", "TEXT NOT NULL", label_doc),
    ], nsys=True, after=f"INSERT OR IGNORE INTO {name} VALUES{rows};\n")
    t.enum, t.cupti_enum, t.values = cpp, enum, values
    return t


# Not an event arg: the export's metadata names the capture it holds.
CAPTURE = C("captureId", "INTEGER NOT NULL", "capture this row belongs to", t="i64", default="0", nsys=False,
            chrome=False)
# The columns every CUPTI GPU-activity table shares, in nsys order (the CUPTI translator fills them
# in one place too: RecordTranslator::gpu_activity). A synchronization may have no device or stream.
def gpu_activity(start_doc, end_doc, correlation_doc, sync=False, rpc=False):
    # rpc: the table's RPC view carries these columns (the kernel table's, kernelsInWindow).
    def R(*args, **kw):
        return Rpc(*args, **kw) if rpc else None
    return [
        C("start", "INTEGER NOT NULL", start_doc, t="i64", default="0", time=True, wire=1, chrome=FIELD,
          rpc=R(1, "start_ns", required=True)),
        C("end", "INTEGER NOT NULL", end_doc, t="i64", default="0", time=True, wire=2, chrome=FIELD,
          rpc=R(2, "end_ns", required=True)),
        C("deviceId", "INTEGER" if sync else "INTEGER NOT NULL",
          "CUDA device ordinal" + (" (NULL when unknown)" if sync else ""), t="i32",
          default=None if sync else "0", wire=3, chrome="device", rpc=R(3, "device_id", required=True)),
        C("contextId", "INTEGER", "CUDA context id", t="i32", wire=4, chrome="context"),
        C("streamId", "INTEGER" if sync else "INTEGER NOT NULL",
          "stream waited on (NULL for context/device syncs)" if sync else "CUDA stream id", t="i32",
          default=None if sync else "0", wire=5, chrome="stream", rpc=R(4, "stream_id", required=True)),
        C("correlationId", "INTEGER", correlation_doc, t="i64", wire=6, chrome="correlation",
          rpc=R(5, "correlation_id")),
        C("globalPid", "INTEGER", "nsys-encoded process id", t="i64", wire=7, rpc=R(6, "global_pid")),
    ]


TABLES = [
    Table("meta", "Key/value facts about the file itself.", [
        C("key", "TEXT PRIMARY KEY NOT NULL", "'schema_version', 'writer', 'writer_version', 'clock', 'created_ns'; "
          "'analysis.<captureId>': the key and rule outcomes the capture's stored findings were analysed under (the analysis cache, analyzer/analysis_cache.h)"),
        C("value", "TEXT NOT NULL", "the value as text (schema_version is a decimal integer)"),
    ]),
    Table("StringIds", "Interned strings (kernel names, API names, annotation text). nsys name and layout.", [
        C("id", "INTEGER PRIMARY KEY NOT NULL", "string id referenced by *Name / nameId / textId columns"),
        C("value", "TEXT NOT NULL", "the string itself, unique"),
    ], nsys=True, after="CREATE UNIQUE INDEX IF NOT EXISTS StringIds_value ON StringIds(value);\n"),
    Table("hosts", "Hosts that contributed data to this file.", [
        C("id", "INTEGER PRIMARY KEY NOT NULL", "host id, local to this file", t="i64", default="0"),
        C("hostname", "TEXT NOT NULL", "host name as reported by uname / the trace", t="str"),
        C("boot_id", "TEXT", "/proc/sys/kernel/random/boot_id when known (distinguishes reboots)", t="str"),
    ], struct="Host", plural="hosts"),
    Table("workflows", "A job: one training or inference workload, possibly several processes and ranks.", [
        C("id", "INTEGER PRIMARY KEY NOT NULL", "workflow id, local to this file", t="i64", default="0"),
        C("name", "TEXT NOT NULL", "job name (FLEETSCOPE_WORKFLOW, Slurm job name, k8s pod, or file stem on import)", t="str"),
        C("user", "TEXT", "owning user name when known", t="str"),
        C("labels", "TEXT", 'JSON object of labels (e.g. {"priority":"latency","slurm_job_id":"123"})',
          t="str", m="labels_json", opt=False, default='"{}"'),
    ], struct="Workflow", plural="workflows"),
    Table("processes", "Operating-system processes seen in captures. A process is (captureId, globalPid): pids repeat "
          "across captures (every imported trace may say pid 1), and each capture's process belongs to its own workflow.", [
        C("captureId", "INTEGER", "capture the process was seen in; NULL only in rows migrated from schema 2 that the migration could not split per capture (they apply to every capture of the file)", t="i64", nsys=False),
        C("globalPid", "INTEGER NOT NULL", "nsys-encoded pid (pid * 0x1000000); unique per capture", t="i64", default="0"),
        C("pid", "INTEGER NOT NULL", "the OS pid", t="i64", default="0"),
        C("host_id", "INTEGER REFERENCES hosts(id)", "host the process ran on", t="i64"),
        C("workflow_id", "INTEGER REFERENCES workflows(id)", "job the process belongs to", t="i64"),
        C("rank", "INTEGER", "distributed rank (Kineto distributedInfo.rank), NULL if not distributed", t="i32"),
        C("world_size", "INTEGER", "distributed world size, NULL if not distributed", t="i32"),
        C("command", "TEXT", "command line when known", t="str"),
        C("start_ns", "INTEGER", "first time the process was seen", t="i64"),
        C("end_ns", "INTEGER", "last time the process was seen (NULL while running)", t="i64"),
    ], struct="Process", plural="processes", upsert=True, constraints=["UNIQUE (captureId, globalPid)"],
        struct_doc="A process of one capture: (captureId, globalPid) is the key, so pids that repeat across captures\n"
                   "// never merge. captureId is unset only in rows migrated from schema 2, which apply to every capture\n"
                   "// of their file (see processes_of)."),
    Table("captures", "One tracing window (or one imported file).", [
        C("id", "INTEGER PRIMARY KEY NOT NULL", "capture id; every event row carries it as captureId", t="i64", default="0"),
        C("kind", "TEXT NOT NULL CHECK (kind IN ('continuous','on_demand','imported','standalone'))", "how the window was opened",
          t="CaptureKind", default="CaptureKind::imported", bind="std::string(to_string(r.kind))",
          read="capture_kind_from_string(s.column_text(i)).value_or(CaptureKind::imported)"),
        C("source", "TEXT NOT NULL", "producer: 'kineto-json', 'nsys-sqlite', 'fleetscope-agent', ...", t="str"),
        C("source_path", "TEXT", "imported file path or traced command", t="str", opt=False),
        C("start_ns", "INTEGER", "window start (first event if imported)", t="i64"),
        C("end_ns", "INTEGER", "window end (last event end if imported)", t="i64"),
        C("dropped_records", "INTEGER NOT NULL DEFAULT 0", "activity records CUPTI or the agent dropped", t="i64", default="0"),
        C("collector_overhead_ns", "INTEGER NOT NULL DEFAULT 0", "time the collector itself spent (CUPTI OVERHEAD + buffer handling)", t="i64", default="0"),
        C("gpu_vendor", "TEXT", "'nvidia', 'amd', or NULL when the capture has no GPU activity", t="str"),
        C("note", "TEXT", "human-readable remark (e.g. 'no GPU activity in this trace')", t="str"),
    ], struct="Capture", plural="captures"),
    Table("TARGET_INFO_GPU", "GPU facts at attach time. nsys TARGET_INFO_GPU names; captureId added.", [
        C("id", "INTEGER NOT NULL", "device ordinal (CUDA device id, = deviceId in activity tables)", t="i32", default="0", wire=1, chrome="id"),
        C("captureId", "INTEGER NOT NULL", "capture the facts were read in", t="i64", default="0", nsys=False, chrome=False),
        C("name", "TEXT", "marketing name, e.g. 'NVIDIA A100-SXM4-40GB'", t="str", opt=False, wire=2),
        C("uuid", "TEXT", "GPU UUID when known", t="str", wire=3),
        C("busLocation", "TEXT", "PCI bus id when known", t="str"),
        C("totalMemory", "INTEGER", "device memory in bytes", t="i64", wire=4, chrome="totalGlobalMem"),
        C("smCount", "INTEGER", "number of streaming multiprocessors", t="i32", wire=5, chrome="numSms"),
        C("computeMajor", "INTEGER", "compute capability, major", t="i32", wire=6),
        C("computeMinor", "INTEGER", "compute capability, minor", t="i32", wire=7),
        C("clockRate", "INTEGER", "SM clock in Hz", t="i64"),
        C("memoryBandwidth", "INTEGER", "peak memory bandwidth in bytes/s when known", t="i64"),
        C("maxThreadsPerBlock", "INTEGER", "per-block thread limit", t="i32"),
        C("maxWarpsPerSm", "INTEGER", "resident warps per SM (occupancy denominator)", t="i32"),
        C("maxBlocksPerSm", "INTEGER", "resident blocks per SM", t="i32"),
        C("maxRegistersPerSm", "INTEGER", "registers per SM", t="i32", chrome="regsPerMultiprocessor"),
        C("maxShmemPerSm", "INTEGER", "shared memory per SM in bytes", t="i64", chrome="sharedMemPerMultiprocessor"),
        C("threadsPerWarp", "INTEGER", "warp size (32 on NVIDIA, 64 on AMD CDNA)", t="i32", chrome="warpSize"),
        C("vendor", "TEXT", "'nvidia' or 'amd'", t="str", opt=False, default='"nvidia"', nsys=False),
    ], chrome=True, struct="GpuInfo", plural="gpus", nsys=True, upsert=True, constraints=["PRIMARY KEY (captureId, id)"],
        wire_batch=12),
    Table("CUPTI_ACTIVITY_KIND_KERNEL", "Kernel executions. nsys CUPTI_ACTIVITY_KIND_KERNEL names; captureId added.",
          gpu_activity("kernel start on the GPU, ns", "kernel end on the GPU, ns (>= start)",
                       "matches the launching CUPTI_ACTIVITY_KIND_RUNTIME row", rpc=True) + [
        C("demangledName", "INTEGER NOT NULL", "StringIds id of the demangled name", t="str",
          intern="demangledNameId", bind="in.kernel_names(r).demangled", wire=8, chrome=FIELD,
          rpc=Rpc(7, "name", required=True)),
        C("shortName", "INTEGER NOT NULL", "StringIds id of the short name (function name without args/templates)",
          t="str", intern="shortNameId", bind="in.kernel_names(r).short_name", wire=9, wire_opt=True,
          nsys_opt=True, rpc=Rpc(8, "short_name")),
        C("mangledName", "INTEGER", "StringIds id of the mangled name when known", strid=True),
        C("gridX", "INTEGER", "grid dimension X (blocks)", t="i32", opt=False, default="0", wire=19, chrome="grid", rpc=Rpc(9, "grid")),
        C("gridY", "INTEGER", "grid dimension Y", t="i32", opt=False, default="0", wire=20, chrome="grid", rpc=Rpc(9, "grid")),
        C("gridZ", "INTEGER", "grid dimension Z", t="i32", opt=False, default="0", wire=21, chrome="grid", rpc=Rpc(9, "grid")),
        C("blockX", "INTEGER", "block dimension X (threads)", t="i32", opt=False, default="0", wire=22, chrome="block", rpc=Rpc(10, "block")),
        C("blockY", "INTEGER", "block dimension Y", t="i32", opt=False, default="0", wire=23, chrome="block", rpc=Rpc(10, "block")),
        C("blockZ", "INTEGER", "block dimension Z", t="i32", opt=False, default="0", wire=24, chrome="block", rpc=Rpc(10, "block")),
        C("registersPerThread", "INTEGER", "registers per thread", t="i32", wire=12, chrome="registers per thread",
          rpc=Rpc(11, "registers_per_thread")),
        C("staticSharedMemory", "INTEGER", "static shared memory per block, bytes", t="i32", wire=13, chrome="static shared memory",
          rpc=Rpc(12, "shared_memory_bytes", sum=True)),
        C("dynamicSharedMemory", "INTEGER", "dynamic shared memory per block, bytes", t="i32", wire=14, chrome="dynamic shared memory",
          rpc=Rpc(12, "shared_memory_bytes", sum=True)),
        C("localMemoryPerThread", "INTEGER", "local memory per thread, bytes", t="i32", wire=15, chrome="local memory per thread"),
        C("graphId", "INTEGER", "CUDA graph id when launched from a graph, else NULL", t="i64", wire=16, chrome="graph id"),
        C("graphNodeId", "INTEGER", "CUDA graph node id when launched from a graph, else NULL", t="i64", wire=17,
          chrome="graph node id"),
        C("launchType", "INTEGER", "0 regular, 1 cooperative single-device, 2 cooperative multi-device", t="i32", wire=18, chrome="launch type"),
        C("blocksPerSm", "REAL", "Kineto 'blocks per SM' when imported (grid blocks / SM count)", t="f64", nsys=False, chrome="blocks per SM"),
        C("warpsPerSm", "REAL", "Kineto 'warps per SM' when imported", t="f64", nsys=False, chrome="warps per SM"),
        C("estOccupancy", "REAL", "Kineto 'est. achieved occupancy %' when imported, else NULL", t="f64", nsys=False,
          chrome="est. achieved occupancy %"),
        CAPTURE,
        C("gridId", "INTEGER", "CUPTI grid id: unique per kernel launch within the process (CUpti_ActivityKernel gridId)",
          t="i64", wire=25, since=4),
    ], chrome=True, struct="Kernel", plural="kernels", nsys=True, event=True, wire_batch=3, extent="end",
        struct_doc="Write side: names as strings. Read side: the same struct with the *Id fields filled and the\n"
                   "// string fields empty (see Reader). An empty shortName is derived from demangledName."),
    Table("CUPTI_ACTIVITY_KIND_MEMCPY", "Memory copies. nsys CUPTI_ACTIVITY_KIND_MEMCPY names; captureId added.",
          gpu_activity("copy start on the GPU, ns", "copy end, ns", "matches the issuing runtime/driver call") + [
        C("bytes", "INTEGER NOT NULL", "bytes copied", t="i64", default="0", wire=8),
        C("copyKind", "INTEGER NOT NULL", "CUpti_ActivityMemcpyKind (ENUM_CUDA_MEMCPY_OPER): 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP ...",
          t="i32", default="kMemcpyUnknown", wire=9, chrome="copy kind", labels="ENUM_CUDA_MEMCPY_OPER"),
        C("srcKind", "INTEGER", "CUpti_ActivityMemoryKind of the source (ENUM_CUDA_MEM_KIND): 1 pageable, 2 pinned, 3 device ...", t="i32", wire=10,
          chrome="src kind", labels="ENUM_CUDA_MEM_KIND"),
        C("dstKind", "INTEGER", "CUpti_ActivityMemoryKind of the destination", t="i32", wire=11, chrome="dst kind",
          labels="ENUM_CUDA_MEM_KIND"),
        C("srcDeviceId", "INTEGER", "source device for peer copies", t="i32", wire=12, chrome="src device"),
        C("dstDeviceId", "INTEGER", "destination device for peer copies", t="i32", wire=13, chrome="dst device"),
        C("graphNodeId", "INTEGER", "CUDA graph node id when from a graph", t="i64", wire=14, chrome="graph node id"),
        CAPTURE,
    ], chrome=True, struct="Memcpy", plural="memcpys", nsys=True, event=True, wire_batch=4, extent="end"),
    Table("CUPTI_ACTIVITY_KIND_MEMSET", "Memsets. nsys CUPTI_ACTIVITY_KIND_MEMSET names; captureId added.",
          gpu_activity("memset start on the GPU, ns", "memset end, ns", "matches the issuing runtime/driver call") + [
        C("value", "INTEGER", "byte value written", t="i32", wire=8),
        C("bytes", "INTEGER NOT NULL", "bytes set", t="i64", default="0", wire=9),
        C("memKind", "INTEGER", "CUpti_ActivityMemoryKind of the target", t="i32", wire=10, chrome="memory kind",
          labels="ENUM_CUDA_MEM_KIND"),
        C("graphNodeId", "INTEGER", "CUDA graph node id when from a graph", t="i64", wire=11, chrome="graph node id"),
        CAPTURE,
    ], chrome=True, struct="Memset", plural="memsets", nsys=True, event=True, wire_batch=5, extent="end"),
    Table("CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA runtime and driver API calls on the host. nsys CUPTI_ACTIVITY_KIND_RUNTIME names.", [
        C("start", "INTEGER NOT NULL", "call entry on the CPU, ns", t="i64", default="0", time=True, wire=1, chrome=FIELD),
        C("end", "INTEGER NOT NULL", "call exit, ns", t="i64", default="0", time=True, wire=2, chrome=FIELD),
        C("eventClass", "INTEGER NOT NULL", "0 = CUDA runtime API, 1 = CUDA driver API (fleetscope; nsys keeps driver calls apart)",
          t="ApiClass", default="ApiClass::runtime", nsys=False,
          read="s.column_int(i) == 1 ? ApiClass::driver : ApiClass::runtime", wire=9, chrome=FIELD),
        C("globalTid", "INTEGER NOT NULL", "nsys-encoded thread id (pid * 0x1000000 + tid)", t="i64", default="0", wire=4, chrome=FIELD),
        C("correlationId", "INTEGER", "links the call to the GPU work it issued", t="i64", wire=5, chrome="correlation"),
        C("nameId", "INTEGER NOT NULL", "StringIds id of the API name, e.g. 'cudaLaunchKernel'", t="str", m="name",
          intern="nameId", wire=6, chrome=FIELD),
        C("returnValue", "INTEGER", "CUresult / cudaError_t returned (0 = success)", t="i32", wire=7, chrome="return value"),
        C("cbid", "INTEGER", "CUPTI callback id when known", t="i32", nsys=False, wire=8),
        CAPTURE,
    ], chrome=True, struct="RuntimeCall", plural="runtime_calls", nsys=True, event=True, wire_batch=6, extent="end"),
    Table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "Synchronization calls and their GPU-side waits. nsys CUPTI_ACTIVITY_KIND_SYNCHRONIZATION names.",
          gpu_activity("wait start, ns", "wait end, ns", "matches the runtime call that waited", sync=True) + [
        C("globalTid", "INTEGER", "nsys-encoded waiting thread when known", t="i64", wire=8),
        C("syncType", "INTEGER NOT NULL", "CUpti_ActivitySynchronizationType (ENUM_CUPTI_SYNC_TYPE): 1 event, 2 stream-wait-event, 3 stream, 4 context",
          t="i32", default="kSyncUnknown", wire=9, chrome=FIELD),
        C("eventId", "INTEGER", "CUDA event id for event syncs", t="i64", wire=10, chrome="wait_on_cuda_event_id"),
        CAPTURE,
        C("eventRecordCorrelationId", "INTEGER",
          "event syncs: correlation id of the cudaEventRecord call whose recording the wait is on (CUPTI "
          "CUDA_EVENT record; Kineto wait_on_cuda_event_record_corr_id), NULL when unknown",
          t="i64", wire=11, since=5, chrome="wait_on_cuda_event_record_corr_id"),
        C("eventRecordStreamId", "INTEGER",
          "event syncs: stream the waited-on event was recorded on (Kineto wait_on_stream), NULL when unknown",
          t="i32", wire=12, since=5, chrome="wait_on_stream"),
    ], chrome=True, struct="Sync", plural="syncs", nsys=True, event=True, wire_batch=7, extent="end"),
    Table("NVTX_EVENTS", "NVTX ranges and markers. nsys NVTX_EVENTS names (subset); captureId added.", [
        C("start", "INTEGER NOT NULL", "range start or mark time, ns", t="i64", default="0", time=True, wire=1, chrome=FIELD),
        C("end", "INTEGER", "range end, ns (NULL for marks)", t="i64", time=True, wire=2, chrome=FIELD),
        C("eventType", "INTEGER NOT NULL", "nsys NvtxEventType: 34 mark, 59 push/pop range, 60 start/end range",
          t="i32", default="kNvtxPushPopRange", wire=3),
        C("rangeId", "INTEGER", "start/end range id", t="i64", wire=4),
        C("text", "TEXT", "inline text (nsys stores short text here)", t="str", opt=False, wire=5,
          read_sql="COALESCE(text, (SELECT value FROM StringIds WHERE id = textId))", chrome=FIELD),
        C("textId", "INTEGER", "StringIds id of the text (registered strings)", bind="in.intern(r.text)", strid=True, chrome=FIELD),
        C("domainId", "INTEGER", "NVTX domain id (0 = default)", t="i32", wire=6),
        C("globalTid", "INTEGER", "nsys-encoded thread id", t="i64", wire=7, chrome=FIELD),
        CAPTURE,
    ], chrome=True, struct="NvtxEvent", plural="nvtx_events", nsys=True, event=True, wire_batch=8, extent="end"),
    Table("cpu_ops", "CPU-side operators and annotations (Kineto cpu_op, user_annotation, python_function).", [
        C("start", "INTEGER NOT NULL", "op start on the CPU, ns", t="i64", default="0", time=True, wire=1, chrome=FIELD),
        C("end", "INTEGER NOT NULL", "op end, ns", t="i64", default="0", time=True, wire=2, chrome=FIELD),
        C("globalTid", "INTEGER NOT NULL", "nsys-encoded thread id", t="i64", default="0", wire=3, chrome=FIELD),
        C("nameId", "INTEGER NOT NULL", "StringIds id of the op name, e.g. 'aten::mm', 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__'",
          t="str", m="name", intern="nameId", wire=4, chrome=FIELD),
        C("category", "TEXT NOT NULL", "'cpu_op', 'user_annotation', 'gpu_user_annotation', 'python_function'",
          t="str", default='"cpu_op"', wire=5, chrome=FIELD),
        C("externalId", "INTEGER", "Kineto 'External id' linking ops to runtime calls", t="i64", wire=6, chrome="External id"),
        CAPTURE,
    ], chrome=True, struct="CpuOp", plural="cpu_ops", event=True, wire_batch=13, extent="end"),
    Table("iterations", "Step boundaries: ProfilerStep#N, NVTX ranges, or the step API.", [
        C("captureId", "INTEGER NOT NULL", "capture the step was seen in", t="i64", default="0", chrome=False),
        C("globalPid", "INTEGER", "process that ran the step", t="i64", wire=1, chrome=FIELD),
        C("step", "INTEGER NOT NULL", "step number (N of ProfilerStep#N, or a running count)", t="i64", default="0", wire=2),
        C("start", "INTEGER NOT NULL", "step start on the CPU, ns", t="i64", default="0", time=True, wire=3, chrome=FIELD),
        C("end", "INTEGER NOT NULL", "step end on the CPU, ns", t="i64", default="0", time=True, wire=4, chrome=FIELD),
        C("source", "TEXT NOT NULL", "'ProfilerStep', 'nvtx', 'api'", t="str", default='"ProfilerStep"', wire=5),
    ], chrome=True, struct="Iteration", plural="iterations", event=True, wire_batch=9, upsert=True,
        constraints=["PRIMARY KEY (captureId, globalPid, step)"]),
    Table("memory_events", "Device memory allocations and frees (memory timeline; persistent P and ephemeral T per iteration).", [
        C("ts", "INTEGER NOT NULL", "time of the event, ns", t="i64", default="0", time=True, wire=1, chrome=FIELD),
        C("captureId", "INTEGER NOT NULL", "capture this row belongs to", t="i64", default="0", chrome=False),
        C("globalPid", "INTEGER", "allocating process", t="i64", wire=2, chrome=FIELD),
        C("deviceId", "INTEGER NOT NULL", "device ordinal (-1 = host)", t="i32", default="0", wire=3, chrome="Device Id"),
        C("address", "INTEGER", "allocation address when known", t="i64", wire=4, chrome="Addr"),
        C("bytes", "INTEGER NOT NULL", "size; positive for alloc, negative for free", t="i64", default="0", wire=5, chrome="Bytes"),
        C("total_allocated", "INTEGER", "bytes allocated on the device after the event, when the source reports it", t="i64", wire=6, chrome="Total Allocated"),
        C("total_reserved", "INTEGER", "bytes reserved by the caching allocator after the event, when known", t="i64", wire=7, chrome="Total Reserved"),
    ], chrome=True, struct="MemoryEvent", plural="memory_events", event=True, wire_batch=10),
    Table("device_samples", "Device metrics sampled over time, long and narrow (like nsys GPU_METRICS).", [
        C("ts", "INTEGER NOT NULL", "sample time, ns", t="i64", default="0", time=True, wire=1, chrome=FIELD),
        C("host_id", "INTEGER", "host of the device", t="i64", wire=2, chrome=False),
        C("deviceId", "INTEGER NOT NULL", "device ordinal", t="i32", default="0", wire=3, chrome=FIELD),
        C("metric_id", "INTEGER NOT NULL", "StringIds id of the metric name, e.g. 'gpu_util_pct', 'mem_used_bytes' (NVML); "
          "'sm_active_ratio', 'sm_occupancy_ratio', 'tensor_active_ratio' (DCGM profiling fields 1002-1004, 0..1)",
          t="str", m="metric", intern="metricId", wire=4,
          read_sql="(SELECT value FROM StringIds WHERE id = metric_id)", chrome=FIELD),
        C("value", "REAL NOT NULL", "metric value in the unit its name states", t="f64", default="0", wire=5, chrome=FIELD),
        C("captureId", "INTEGER", "capture the sample was taken in, NULL for continuous sampling", t="i64", chrome=False),
    ], chrome=True, struct="DeviceSample", plural="device_samples", event=True, wire_batch=14),
    # Not in the Chrome-trace export: Kineto traces carry the link as cpu_ops' externalId.
    Table("external_correlation", "CUPTI external correlations: which framework-level id (e.g. a PyTorch op id pushed with "
          "cuptiActivityPushExternalCorrelationId) issued which CUDA API call.", [
        C("captureId", "INTEGER NOT NULL", "capture this row belongs to", t="i64", default="0"),
        C("correlationId", "INTEGER NOT NULL", "CUPTI correlation id of the runtime/driver call", t="i64", default="0", wire=1),
        C("externalKind", "INTEGER NOT NULL", "CUpti_ExternalCorrelationKind (1 unknown, 2 OpenACC, 3 custom0 = PyTorch, ...)",
          t="i32", default="0", wire=2),
        C("externalId", "INTEGER NOT NULL", "the id the framework pushed", t="i64", default="0", wire=3),
    ], struct="ExternalCorrelation", plural="external_correlations", event=True, wire_batch=11),
    Table("workflow_metrics", "Continuous per-window aggregates per workflow and device.", [
        C("workflow_id", "INTEGER NOT NULL REFERENCES workflows(id)", "the job", t="i64", default="0"),
        C("deviceId", "INTEGER NOT NULL", "device ordinal", t="i32", default="0"),
        C("window_start", "INTEGER NOT NULL", "window start, ns", t="i64", default="0"),
        C("window_end", "INTEGER NOT NULL", "window end, ns", t="i64", default="0"),
        C("metric", "TEXT NOT NULL", "metric name (same names as the analyzer's metrics)", t="str"),
        C("value", "REAL NOT NULL", "metric value", t="f64", default="0"),
    ], struct="WorkflowMetric", plural="workflow_metrics"),
    Table("findings", "Analyzer findings.", [
        C("id", "INTEGER PRIMARY KEY NOT NULL", "finding id", t="i64", default="0"),
        C("captureId", "INTEGER NOT NULL", "capture analysed", t="i64", default="0"),
        C("rule", "TEXT NOT NULL", "rule id, e.g. 'launch_bound_small_kernels'", t="str"),
        C("severity", "TEXT NOT NULL CHECK (severity IN ('info','low','medium','high','critical'))", "how bad", t="str"),
        C("deviceId", "INTEGER", "device concerned, NULL if capture-wide", t="i32"),
        C("window_start", "INTEGER", "first window start, ns", t="i64"),
        C("window_end", "INTEGER", "last window end, ns", t="i64"),
        C("impact_ns", "INTEGER NOT NULL DEFAULT 0", "estimated GPU time recoverable, ns", t="i64", default="0"),
        C("evidence", "TEXT NOT NULL", "JSON: windows, top offenders with counts and times, thresholds used",
          t="str", m="evidence_json", default='"{}"'),
        C("recommendation", "TEXT NOT NULL", "concrete advice for the job's owner", t="str"),
        C("created_ns", "INTEGER NOT NULL", "when the analysis ran", t="i64", default="0"),
    ], struct="Finding", plural="findings"),
    Table("lane_plans", "Consolidation plans made by the sharer.", [
        C("id", "INTEGER PRIMARY KEY NOT NULL", "plan id", t="i64", default="0"),
        C("created_ns", "INTEGER NOT NULL", "when the plan was made", t="i64", default="0"),
        C("policy", "TEXT NOT NULL", "scheduling policy the plan assumes", t="str"),
        C("plan", "TEXT NOT NULL", "JSON: GPUs, lanes (capacity), jobs per lane, predicted slowdowns, GPUs freed",
          t="str", m="plan_json"),
        C("applied", "INTEGER NOT NULL DEFAULT 0", "1 once carried out", t="bool", default="false"),
    ], struct="LanePlan", plural="lane_plans"),
    Table("sharing_events", "What the sharer did.", [
        C("ts", "INTEGER NOT NULL", "when, ns", t="i64", m="ts_ns", default="0"),
        C("plan_id", "INTEGER REFERENCES lane_plans(id)", "plan being carried out", t="i64"),
        C("kind", "TEXT NOT NULL", "'lane_created', 'lane_freed', 'job_admitted', 'job_refused', 'job_moved', 'gate_wait'",
          t="str"),
        C("detail", "TEXT NOT NULL", "JSON with the specifics", t="str", m="detail_json"),
    ], struct="SharingEvent", plural="sharing_events"),
    enum_table("ENUM_CUDA_MEMCPY_OPER", "CUpti_ActivityMemcpyKind", "short label, e.g. 'Host-to-Device'", [
        (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown", "Unknown"), (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device", "HtoD"),
        (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host", "DtoH"), (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array", "HtoA"),
        (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host", "AtoH"), (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array", "AtoA"),
        (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device", "AtoD"), (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array", "DtoA"),
        (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device", "DtoD"), (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host", "HtoH"),
        (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer", "PtoP")],
        # memcpy_kind_short: "HtoD", as in Kineto's "Memcpy HtoD (Pageable -> Device)".
        Enum("MemcpyKind", "kMemcpy", label="memcpy_kind_label", short="memcpy_kind_short")),
    enum_table("ENUM_CUDA_MEM_KIND", "CUpti_ActivityMemoryKind", "short label, e.g. 'Pageable'", [
        (0, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown", "Unknown"),
        (1, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable", "Pageable"),
        (2, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned", "Pinned"), (3, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device", "Device"),
        (4, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array", "Array"), (5, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed", "Managed"),
        (6, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static", "DeviceStatic"),
        (7, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static", "ManagedStatic")],
        # The labels are Kineto's too ("Pageable -> Device").
        Enum("MemoryKind", "kMem", label="memory_kind_label")),
    # Kineto names syncs otherwise ("Stream Sync"): store::sync_type_label (rows.h) has those names.
    enum_table("ENUM_CUPTI_SYNC_TYPE", "CUpti_ActivitySynchronizationType", "short label", [
        (0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown", "Unknown"),
        (1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync", "Event"),
        (2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait event", "StreamWaitEvent"),
        (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync", "Stream"),
        (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync", "Context")],
        Enum("SyncType", "kSync")),
    Table("event_extent", 'Longest duration per (table, captureId), kept by the store so that an overlap query '
          '"rows intersecting [a, b)" becomes the index range start IN [a - max_duration, b).', [
        C("tbl", "TEXT NOT NULL", "event table name"),
        C("captureId", "INTEGER NOT NULL", "capture"),
        C("max_duration", "INTEGER NOT NULL", "longest end - start in that table and capture, ns"),
    ], constraints=["PRIMARY KEY (tbl, captureId)"]),
    Table("capture_row_ranges", "Where each capture's rows of an event table lie: runs of consecutive rowids holding one "
          "capture's rows, recorded by the store's writer in the transaction that inserts them (so the daemon's host "
          "database needs no per-capture index; readers select a capture's rows by these ranges, "
          "store/capture_rows.h). Every row of capture C in table T lies in a range (T, C).", [
        C("tbl", "TEXT NOT NULL", "event table name"),
        C("captureId", "INTEGER NOT NULL", "capture"),
        C("first_rowid", "INTEGER NOT NULL", "rowid of the run's first row"),
        C("last_rowid", "INTEGER NOT NULL", "rowid of the run's last row (>= first_rowid)"),
        C("rows", "INTEGER NOT NULL", "rows of the capture in the run; a capture's sum differing from the rows found in "
          "its ranges means rowids changed (a VACUUM), and readers fall back to the captureId filter"),
    ], constraints=["PRIMARY KEY (tbl, captureId, first_rowid)"], since=7),
]

HEADER = """fleetscope trace store, schema version {version}.

One SQLite file per host (daemon) or per capture (standalone `fleetscope run`, `import`).
Times are INTEGER nanoseconds on the CLOCK_REALTIME base that CUPTI uses by default.
Strings are interned in StringIds and referenced by id.

The CUPTI_*, NVTX_EVENTS, TARGET_INFO_GPU and ENUM_* tables use the table and column names of the
Nsight Systems SQLite export (`nsys export --type sqlite`), so SQL written for nsys runs here.
We add one column to them, `captureId`, so that one file can hold several tracing windows.
globalPid / globalTid use the nsys encoding: pid * 0x1000000 (+ tid for globalTid), i.e.
  pid = (globalTid >> 24) & 0xFFFFFF, tid = globalTid & 0xFFFFFF."""
