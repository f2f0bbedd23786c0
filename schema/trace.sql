-- fleetscope trace store, schema version 3.
--
-- One SQLite file per host (daemon) or per capture (standalone `fleetscope run`, `import`).
-- Times are INTEGER nanoseconds on the CLOCK_REALTIME base that CUPTI uses by default.
-- Strings are interned in StringIds and referenced by id.
--
-- The CUPTI_*, NVTX_EVENTS, TARGET_INFO_GPU and ENUM_* tables use the table and column names of the
-- Nsight Systems SQLite export (`nsys export --type sqlite`), so SQL written for nsys runs here.
-- We add one column to them, `captureId`, so that one file can hold several tracing windows.
-- globalPid / globalTid use the nsys encoding: pid * 0x1000000 (+ tid for globalTid), i.e.
--   pid = (globalTid >> 24) & 0xFFFFFF, tid = globalTid & 0xFFFFFF.
--
-- Conventions for this file: every column carries a `--` doc comment on its line; the store
-- library parses nothing from here but executes it verbatim, and docs/schema.md is generated from it.

-- Key/value facts about the file itself.
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY NOT NULL,  -- 'schema_version', 'writer', 'writer_version', 'clock', 'created_ns'
  value TEXT NOT NULL               -- the value as text (schema_version is a decimal integer)
);

-- Interned strings (kernel names, API names, annotation text). nsys name and layout.
CREATE TABLE IF NOT EXISTS StringIds (
  id    INTEGER PRIMARY KEY NOT NULL,  -- string id referenced by *Name / nameId / textId columns
  value TEXT NOT NULL                  -- the string itself, unique
);
CREATE UNIQUE INDEX IF NOT EXISTS StringIds_value ON StringIds(value);

-- Hosts that contributed data to this file.
CREATE TABLE IF NOT EXISTS hosts (
  id       INTEGER PRIMARY KEY NOT NULL,  -- host id, local to this file
  hostname TEXT NOT NULL,                 -- host name as reported by uname / the trace
  boot_id  TEXT                           -- /proc/sys/kernel/random/boot_id when known (distinguishes reboots)
);

-- A job: one training or inference workload, possibly several processes and ranks.
CREATE TABLE IF NOT EXISTS workflows (
  id     INTEGER PRIMARY KEY NOT NULL,  -- workflow id, local to this file
  name   TEXT NOT NULL,                 -- job name (FLEETSCOPE_WORKFLOW, Slurm job name, k8s pod, or file stem on import)
  user   TEXT,                          -- owning user name when known
  labels TEXT                           -- JSON object of labels (e.g. {"priority":"latency","slurm_job_id":"123"})
);

-- Operating-system processes seen in captures. A process is (captureId, globalPid): pids repeat
-- across captures (every imported trace may say pid 1), and each capture's process belongs to its
-- own workflow.
CREATE TABLE IF NOT EXISTS processes (
  captureId   INTEGER,                       -- capture the process was seen in; NULL only in rows migrated from schema 2 (they apply to every capture of the file)
  globalPid   INTEGER NOT NULL,              -- nsys-encoded pid (pid * 0x1000000); unique per capture
  pid         INTEGER NOT NULL,              -- the OS pid
  host_id     INTEGER REFERENCES hosts(id),  -- host the process ran on
  workflow_id INTEGER REFERENCES workflows(id), -- job the process belongs to
  rank        INTEGER,                       -- distributed rank (Kineto distributedInfo.rank), NULL if not distributed
  world_size  INTEGER,                       -- distributed world size, NULL if not distributed
  command     TEXT,                          -- command line when known
  start_ns    INTEGER,                       -- first time the process was seen
  end_ns      INTEGER,                       -- last time the process was seen (NULL while running)
  UNIQUE (captureId, globalPid)
);

-- One tracing window (or one imported file).
CREATE TABLE IF NOT EXISTS captures (
  id                    INTEGER PRIMARY KEY NOT NULL,  -- capture id; every event row carries it as captureId
  kind                  TEXT NOT NULL CHECK (kind IN ('continuous','on_demand','imported','standalone')), -- how the window was opened
  source                TEXT NOT NULL,                 -- producer: 'kineto-json', 'nsys-sqlite', 'fleetscope-agent', ...
  source_path           TEXT,                          -- imported file path or traced command
  start_ns              INTEGER,                       -- window start (first event if imported)
  end_ns                INTEGER,                       -- window end (last event end if imported)
  dropped_records       INTEGER NOT NULL DEFAULT 0,    -- activity records CUPTI or the agent dropped
  collector_overhead_ns INTEGER NOT NULL DEFAULT 0,    -- time the collector itself spent (CUPTI OVERHEAD + buffer handling)
  gpu_vendor            TEXT,                          -- 'nvidia', 'amd', or NULL when the capture has no GPU activity
  note                  TEXT                           -- human-readable remark (e.g. 'no GPU activity in this trace')
);

-- GPU facts at attach time. nsys TARGET_INFO_GPU names; captureId added.
CREATE TABLE IF NOT EXISTS TARGET_INFO_GPU (
  id                   INTEGER NOT NULL,  -- device ordinal (CUDA device id, = deviceId in activity tables)
  captureId            INTEGER NOT NULL,  -- capture the facts were read in
  name                 TEXT,              -- marketing name, e.g. 'NVIDIA A100-SXM4-40GB'
  uuid                 TEXT,              -- GPU UUID when known
  busLocation          TEXT,              -- PCI bus id when known
  totalMemory          INTEGER,           -- device memory in bytes
  smCount              INTEGER,           -- number of streaming multiprocessors
  computeMajor         INTEGER,           -- compute capability, major
  computeMinor         INTEGER,           -- compute capability, minor
  clockRate            INTEGER,           -- SM clock in Hz
  memoryBandwidth      INTEGER,           -- peak memory bandwidth in bytes/s when known
  maxThreadsPerBlock   INTEGER,           -- per-block thread limit
  maxWarpsPerSm        INTEGER,           -- resident warps per SM (occupancy denominator)
  maxBlocksPerSm       INTEGER,           -- resident blocks per SM
  maxRegistersPerSm    INTEGER,           -- registers per SM
  maxShmemPerSm        INTEGER,           -- shared memory per SM in bytes
  threadsPerWarp       INTEGER,           -- warp size (32 on NVIDIA, 64 on AMD CDNA)
  vendor               TEXT,              -- 'nvidia' or 'amd'
  PRIMARY KEY (captureId, id)
);

-- Kernel executions. nsys CUPTI_ACTIVITY_KIND_KERNEL names; captureId added.
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_KERNEL (
  start               INTEGER NOT NULL,  -- kernel start on the GPU, ns
  end                 INTEGER NOT NULL,  -- kernel end on the GPU, ns (>= start)
  deviceId            INTEGER NOT NULL,  -- CUDA device ordinal
  contextId           INTEGER,           -- CUDA context id
  streamId            INTEGER NOT NULL,  -- CUDA stream id
  correlationId       INTEGER,           -- matches the launching CUPTI_ACTIVITY_KIND_RUNTIME row
  globalPid           INTEGER,           -- nsys-encoded process id
  demangledName       INTEGER NOT NULL,  -- StringIds id of the demangled name
  shortName           INTEGER NOT NULL,  -- StringIds id of the short name (function name without args/templates)
  mangledName         INTEGER,           -- StringIds id of the mangled name when known
  gridX               INTEGER,           -- grid dimension X (blocks)
  gridY               INTEGER,           -- grid dimension Y
  gridZ               INTEGER,           -- grid dimension Z
  blockX              INTEGER,           -- block dimension X (threads)
  blockY              INTEGER,           -- block dimension Y
  blockZ              INTEGER,           -- block dimension Z
  registersPerThread  INTEGER,           -- registers per thread
  staticSharedMemory  INTEGER,           -- static shared memory per block, bytes
  dynamicSharedMemory INTEGER,           -- dynamic shared memory per block, bytes
  localMemoryPerThread INTEGER,          -- local memory per thread, bytes
  graphId             INTEGER,           -- CUDA graph id when launched from a graph, else NULL
  graphNodeId         INTEGER,           -- CUDA graph node id when launched from a graph, else NULL
  launchType          INTEGER,           -- 0 regular, 1 cooperative single-device, 2 cooperative multi-device
  blocksPerSm         REAL,              -- Kineto 'blocks per SM' when imported (grid blocks / SM count)
  warpsPerSm          REAL,              -- Kineto 'warps per SM' when imported
  estOccupancy        REAL,              -- Kineto 'est. achieved occupancy %' when imported, else NULL
  captureId           INTEGER NOT NULL   -- capture this row belongs to
);

-- Memory copies. nsys CUPTI_ACTIVITY_KIND_MEMCPY names; captureId added.
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_MEMCPY (
  start         INTEGER NOT NULL,  -- copy start on the GPU, ns
  end           INTEGER NOT NULL,  -- copy end, ns
  deviceId      INTEGER NOT NULL,  -- CUDA device ordinal
  contextId     INTEGER,           -- CUDA context id
  streamId      INTEGER NOT NULL,  -- CUDA stream id
  correlationId INTEGER,           -- matches the issuing runtime/driver call
  globalPid     INTEGER,           -- nsys-encoded process id
  bytes         INTEGER NOT NULL,  -- bytes copied
  copyKind      INTEGER NOT NULL,  -- CUpti_ActivityMemcpyKind (ENUM_CUDA_MEMCPY_OPER): 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP ...
  srcKind       INTEGER,           -- CUpti_ActivityMemoryKind of the source (ENUM_CUDA_MEM_KIND): 1 pageable, 2 pinned, 3 device ...
  dstKind       INTEGER,           -- CUpti_ActivityMemoryKind of the destination
  srcDeviceId   INTEGER,           -- source device for peer copies
  dstDeviceId   INTEGER,           -- destination device for peer copies
  graphNodeId   INTEGER,           -- CUDA graph node id when from a graph
  captureId     INTEGER NOT NULL   -- capture this row belongs to
);

-- Memsets. nsys CUPTI_ACTIVITY_KIND_MEMSET names; captureId added.
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_MEMSET (
  start         INTEGER NOT NULL,  -- memset start on the GPU, ns
  end           INTEGER NOT NULL,  -- memset end, ns
  deviceId      INTEGER NOT NULL,  -- CUDA device ordinal
  contextId     INTEGER,           -- CUDA context id
  streamId      INTEGER NOT NULL,  -- CUDA stream id
  correlationId INTEGER,           -- matches the issuing runtime/driver call
  globalPid     INTEGER,           -- nsys-encoded process id
  value         INTEGER,           -- byte value written
  bytes         INTEGER NOT NULL,  -- bytes set
  memKind       INTEGER,           -- CUpti_ActivityMemoryKind of the target
  graphNodeId   INTEGER,           -- CUDA graph node id when from a graph
  captureId     INTEGER NOT NULL   -- capture this row belongs to
);

-- CUDA runtime and driver API calls on the host. nsys CUPTI_ACTIVITY_KIND_RUNTIME names.
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_RUNTIME (
  start         INTEGER NOT NULL,  -- call entry on the CPU, ns
  end           INTEGER NOT NULL,  -- call exit, ns
  eventClass    INTEGER NOT NULL,  -- 0 = CUDA runtime API, 1 = CUDA driver API (fleetscope; nsys keeps driver calls apart)
  globalTid     INTEGER NOT NULL,  -- nsys-encoded thread id (pid * 0x1000000 + tid)
  correlationId INTEGER,           -- links the call to the GPU work it issued
  nameId        INTEGER NOT NULL,  -- StringIds id of the API name, e.g. 'cudaLaunchKernel'
  returnValue   INTEGER,           -- CUresult / cudaError_t returned (0 = success)
  cbid          INTEGER,           -- CUPTI callback id when known
  captureId     INTEGER NOT NULL   -- capture this row belongs to
);

-- Synchronization calls and their GPU-side waits. nsys CUPTI_ACTIVITY_KIND_SYNCHRONIZATION names.
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
  start         INTEGER NOT NULL,  -- wait start, ns
  end           INTEGER NOT NULL,  -- wait end, ns
  deviceId      INTEGER,           -- CUDA device ordinal (NULL when unknown)
  contextId     INTEGER,           -- CUDA context id
  streamId      INTEGER,           -- stream waited on (NULL for context/device syncs)
  correlationId INTEGER,           -- matches the runtime call that waited
  globalPid     INTEGER,           -- nsys-encoded process id
  globalTid     INTEGER,           -- nsys-encoded waiting thread when known
  syncType      INTEGER NOT NULL,  -- CUpti_ActivitySynchronizationType (ENUM_CUPTI_SYNC_TYPE): 1 event, 2 stream-wait-event, 3 stream, 4 context
  eventId       INTEGER,           -- CUDA event id for event syncs
  captureId     INTEGER NOT NULL   -- capture this row belongs to
);

-- NVTX ranges and markers. nsys NVTX_EVENTS names (subset); captureId added.
CREATE TABLE IF NOT EXISTS NVTX_EVENTS (
  start       INTEGER NOT NULL,  -- range start or mark time, ns
  end         INTEGER,           -- range end, ns (NULL for marks)
  eventType   INTEGER NOT NULL,  -- nsys NvtxEventType: 34 mark, 59 push/pop range, 60 start/end range
  rangeId     INTEGER,           -- start/end range id
  text        TEXT,              -- inline text (nsys stores short text here)
  textId      INTEGER,           -- StringIds id of the text (registered strings)
  domainId    INTEGER,           -- NVTX domain id (0 = default)
  globalTid   INTEGER,           -- nsys-encoded thread id
  captureId   INTEGER NOT NULL   -- capture this row belongs to
);

-- CPU-side operators and annotations (Kineto cpu_op, user_annotation, python_function).
CREATE TABLE IF NOT EXISTS cpu_ops (
  start       INTEGER NOT NULL,  -- op start on the CPU, ns
  end         INTEGER NOT NULL,  -- op end, ns
  globalTid   INTEGER NOT NULL,  -- nsys-encoded thread id
  nameId      INTEGER NOT NULL,  -- StringIds id of the op name, e.g. 'aten::mm', 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__'
  category    TEXT NOT NULL,     -- 'cpu_op', 'user_annotation', 'gpu_user_annotation', 'python_function'
  externalId  INTEGER,           -- Kineto 'External id' linking ops to runtime calls
  captureId   INTEGER NOT NULL   -- capture this row belongs to
);

-- CUPTI external correlations: which framework-level id (e.g. a PyTorch op id pushed with
-- cuptiActivityPushExternalCorrelationId) issued which CUDA API call.
CREATE TABLE IF NOT EXISTS external_correlation (
  captureId     INTEGER NOT NULL,  -- capture this row belongs to
  correlationId INTEGER NOT NULL,  -- CUPTI correlation id of the runtime/driver call
  externalKind  INTEGER NOT NULL,  -- CUpti_ExternalCorrelationKind (1 unknown, 2 OpenACC, 3 custom0 = PyTorch, ...)
  externalId    INTEGER NOT NULL   -- the id the framework pushed
);

-- Step boundaries: ProfilerStep#N, NVTX ranges, or the step API.
CREATE TABLE IF NOT EXISTS iterations (
  captureId   INTEGER NOT NULL,  -- capture the step was seen in
  globalPid   INTEGER,           -- process that ran the step
  step        INTEGER NOT NULL,  -- step number (N of ProfilerStep#N, or a running count)
  start       INTEGER NOT NULL,  -- step start on the CPU, ns
  end         INTEGER NOT NULL,  -- step end on the CPU, ns
  source      TEXT NOT NULL,     -- 'ProfilerStep', 'nvtx', 'api'
  PRIMARY KEY (captureId, globalPid, step)
);

-- Device memory allocations and frees (memory timeline; persistent P and ephemeral T per iteration).
CREATE TABLE IF NOT EXISTS memory_events (
  ts          INTEGER NOT NULL,  -- time of the event, ns
  captureId   INTEGER NOT NULL,  -- capture this row belongs to
  globalPid   INTEGER,           -- allocating process
  deviceId    INTEGER NOT NULL,  -- device ordinal (-1 = host)
  address     INTEGER,           -- allocation address when known
  bytes       INTEGER NOT NULL,  -- size; positive for alloc, negative for free
  total_allocated INTEGER,       -- bytes allocated on the device after the event, when the source reports it
  total_reserved  INTEGER        -- bytes reserved by the caching allocator after the event, when known
);

-- Device metrics sampled over time, long and narrow (like nsys GPU_METRICS).
CREATE TABLE IF NOT EXISTS device_samples (
  ts          INTEGER NOT NULL,  -- sample time, ns
  host_id     INTEGER,           -- host of the device
  deviceId    INTEGER NOT NULL,  -- device ordinal
  metric_id   INTEGER NOT NULL,  -- StringIds id of the metric name, e.g. 'gpu_util_pct', 'mem_used_bytes' (NVML); 'sm_active_ratio', 'sm_occupancy_ratio', 'tensor_active_ratio' (DCGM profiling fields 1002-1004, 0..1)
  value       REAL NOT NULL,     -- metric value in the unit its name states
  captureId   INTEGER            -- capture the sample was taken in, NULL for continuous sampling
);

-- Continuous per-window aggregates per workflow and device.
CREATE TABLE IF NOT EXISTS workflow_metrics (
  workflow_id INTEGER NOT NULL REFERENCES workflows(id), -- the job
  deviceId    INTEGER NOT NULL,  -- device ordinal
  window_start INTEGER NOT NULL, -- window start, ns
  window_end  INTEGER NOT NULL,  -- window end, ns
  metric      TEXT NOT NULL,     -- metric name (same names as the analyzer's metrics)
  value       REAL NOT NULL      -- metric value
);

-- Analyzer findings.
CREATE TABLE IF NOT EXISTS findings (
  id           INTEGER PRIMARY KEY NOT NULL, -- finding id
  captureId    INTEGER NOT NULL,  -- capture analysed
  rule         TEXT NOT NULL,     -- rule id, e.g. 'launch_bound_small_kernels'
  severity     TEXT NOT NULL CHECK (severity IN ('info','low','medium','high','critical')), -- how bad
  deviceId     INTEGER,           -- device concerned, NULL if capture-wide
  window_start INTEGER,           -- first window start, ns
  window_end   INTEGER,           -- last window end, ns
  impact_ns    INTEGER NOT NULL DEFAULT 0, -- estimated GPU time recoverable, ns
  evidence     TEXT NOT NULL,     -- JSON: windows, top offenders with counts and times, thresholds used
  recommendation TEXT NOT NULL,   -- concrete advice for the job's owner
  created_ns   INTEGER NOT NULL   -- when the analysis ran
);

-- Consolidation plans made by the sharer.
CREATE TABLE IF NOT EXISTS lane_plans (
  id          INTEGER PRIMARY KEY NOT NULL, -- plan id
  created_ns  INTEGER NOT NULL,   -- when the plan was made
  policy      TEXT NOT NULL,      -- scheduling policy the plan assumes
  plan        TEXT NOT NULL,      -- JSON: GPUs, lanes (capacity), jobs per lane, predicted slowdowns, GPUs freed
  applied     INTEGER NOT NULL DEFAULT 0 -- 1 once carried out
);

-- What the sharer did.
CREATE TABLE IF NOT EXISTS sharing_events (
  ts          INTEGER NOT NULL,   -- when, ns
  plan_id     INTEGER REFERENCES lane_plans(id), -- plan being carried out
  kind        TEXT NOT NULL,      -- 'lane_created', 'lane_freed', 'job_admitted', 'job_refused', 'job_moved', 'gate_wait'
  detail      TEXT NOT NULL       -- JSON with the specifics
);

-- Enum labels (nsys names).
CREATE TABLE IF NOT EXISTS ENUM_CUDA_MEMCPY_OPER (
  id    INTEGER PRIMARY KEY NOT NULL,  -- CUpti_ActivityMemcpyKind value
  name  TEXT NOT NULL,                 -- enum constant name
  label TEXT NOT NULL                  -- short label, e.g. 'Host-to-Device'
);
CREATE TABLE IF NOT EXISTS ENUM_CUDA_MEM_KIND (
  id    INTEGER PRIMARY KEY NOT NULL,  -- CUpti_ActivityMemoryKind value
  name  TEXT NOT NULL,                 -- enum constant name
  label TEXT NOT NULL                  -- short label, e.g. 'Pageable'
);
CREATE TABLE IF NOT EXISTS ENUM_CUPTI_SYNC_TYPE (
  id    INTEGER PRIMARY KEY NOT NULL,  -- CUpti_ActivitySynchronizationType value
  name  TEXT NOT NULL,                 -- enum constant name
  label TEXT NOT NULL                  -- short label
);
INSERT OR IGNORE INTO ENUM_CUDA_MEMCPY_OPER VALUES
  (0,'CUDA_MEMCPY_KIND_UNKNOWN','Unknown'),(1,'CUDA_MEMCPY_KIND_HTOD','Host-to-Device'),
  (2,'CUDA_MEMCPY_KIND_DTOH','Device-to-Host'),(3,'CUDA_MEMCPY_KIND_HTOA','Host-to-Array'),
  (4,'CUDA_MEMCPY_KIND_ATOH','Array-to-Host'),(5,'CUDA_MEMCPY_KIND_ATOA','Array-to-Array'),
  (6,'CUDA_MEMCPY_KIND_ATOD','Array-to-Device'),(7,'CUDA_MEMCPY_KIND_DTOA','Device-to-Array'),
  (8,'CUDA_MEMCPY_KIND_DTOD','Device-to-Device'),(9,'CUDA_MEMCPY_KIND_HTOH','Host-to-Host'),
  (10,'CUDA_MEMCPY_KIND_PTOP','Peer-to-Peer');
INSERT OR IGNORE INTO ENUM_CUDA_MEM_KIND VALUES
  (0,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown'),(1,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),
  (2,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),(3,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),
  (4,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),(5,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),
  (6,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),(7,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static');
INSERT OR IGNORE INTO ENUM_CUPTI_SYNC_TYPE VALUES
  (0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown'),
  (1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync'),
  (2,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT','Stream wait event'),
  (3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync'),
  (4,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE','Context sync');

-- Longest duration per (table, captureId), kept by the store so that an overlap query
-- "rows intersecting [a, b)" becomes the index range start IN [a - max_duration, b).
CREATE TABLE IF NOT EXISTS event_extent (
  tbl          TEXT NOT NULL,     -- event table name
  captureId    INTEGER NOT NULL,  -- capture
  max_duration INTEGER NOT NULL,  -- longest end - start in that table and capture, ns
  PRIMARY KEY (tbl, captureId)
);
