-- v2 -> v3: a process is (captureId, globalPid), no longer globalPid across the whole file, so
-- captures whose pids repeat keep their own process rows and workflows. A schema-2 file kept one
-- row per globalPid (the last writer's); it is kept with captureId NULL, which readers apply to
-- every capture of the file that has no row of its own (what schema 2 meant).
CREATE TABLE processes_v3 (
  captureId   INTEGER,
  globalPid   INTEGER NOT NULL,
  pid         INTEGER NOT NULL,
  host_id     INTEGER REFERENCES hosts(id),
  workflow_id INTEGER REFERENCES workflows(id),
  rank        INTEGER,
  world_size  INTEGER,
  command     TEXT,
  start_ns    INTEGER,
  end_ns      INTEGER,
  UNIQUE (captureId, globalPid)
);
INSERT INTO processes_v3(captureId, globalPid, pid, host_id, workflow_id, rank, world_size, command, start_ns, end_ns)
  SELECT NULL, globalPid, pid, host_id, workflow_id, rank, world_size, command, start_ns, end_ns FROM processes;
DROP TABLE processes;
ALTER TABLE processes_v3 RENAME TO processes;
-- Repair of what schema 2 merged, from the rows. Before schema 3 every capture that said pid P
-- upserted the one row of P, so in a file of imported captures whose pids repeat (40 Kineto
-- traces that all say pid 100) the row points at the last capture's workflow and the other
-- workflows are left without a process: `fleet` named every capture after the last file. The
-- event rows still carry (captureId, globalPid) (globalTid >> 24 << 24 for host-side rows), and
-- an import made one workflow per capture, in capture order (the parallel import writes each
-- file's metadata in file order). So where every capture of the file is imported and there are
-- as many workflows as captures, the k-th capture's process rows are split out of a shared
-- row and pointed at the k-th workflow. Only pids seen in more than one capture are split; a
-- split row keeps the host and command of the shared one, takes its capture's window as its
-- first/last time, and leaves rank and world size unknown (they were the last file's).
-- Files of another shape (a daemon's host database: one workflow per job, windows of the same
-- processes) keep the file-wide rows, as above.
CREATE TEMP TABLE v3_capture_workflow AS
  SELECT c.id AS captureId, w.id AS workflow_id
  FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS k FROM captures) AS c
  JOIN (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS k FROM workflows) AS w ON w.k = c.k
  WHERE (SELECT count(*) FROM captures) = (SELECT count(*) FROM workflows)
    AND NOT EXISTS (SELECT 1 FROM captures WHERE kind <> 'imported');
CREATE TEMP TABLE v3_seen AS
  SELECT DISTINCT captureId, globalPid FROM (
    SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
    UNION ALL SELECT captureId, globalPid FROM iterations
    UNION ALL SELECT captureId, globalPid FROM memory_events
    UNION ALL SELECT captureId, (globalTid >> 24) << 24 FROM CUPTI_ACTIVITY_KIND_RUNTIME
    UNION ALL SELECT captureId, (globalTid >> 24) << 24 FROM cpu_ops
    UNION ALL SELECT captureId, (globalTid >> 24) << 24 FROM NVTX_EVENTS)
  WHERE captureId IS NOT NULL AND globalPid IS NOT NULL
    AND captureId IN (SELECT captureId FROM v3_capture_workflow);
DELETE FROM v3_seen WHERE globalPid NOT IN
  (SELECT globalPid FROM v3_seen GROUP BY globalPid HAVING count(*) > 1);
INSERT INTO processes(captureId, globalPid, pid, host_id, workflow_id, rank, world_size, command, start_ns, end_ns)
  SELECT s.captureId, p.globalPid, p.pid, p.host_id, m.workflow_id,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.rank END,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.world_size END,
         p.command,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.start_ns ELSE c.start_ns END,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.end_ns ELSE c.end_ns END
  FROM v3_seen AS s
  JOIN processes AS p ON p.captureId IS NULL AND p.globalPid = s.globalPid
  JOIN v3_capture_workflow AS m ON m.captureId = s.captureId
  JOIN captures AS c ON c.id = s.captureId;
DELETE FROM processes WHERE captureId IS NULL
  AND globalPid IN (SELECT globalPid FROM v3_seen);
DROP TABLE v3_seen;
DROP TABLE v3_capture_workflow;
