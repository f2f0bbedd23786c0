-- Splits the process rows schema 2 merged into one row per capture, from the rows. Included by the
-- v2 -> v3 step and by the v5 -> v6 step (files the v2 -> v3 step migrated before it had this
-- repair); idempotent, and it changes nothing in a file without file-wide (captureId NULL) rows.
--
-- Before schema 3 every capture that said pid P upserted the one row of P, so in a file of
-- imported captures whose pids repeat (40 Kineto traces that all say pid 100) the row points at
-- the last capture's workflow and the other workflows are left without a process: `fleet` named
-- every capture after the last file. The event rows still carry (captureId, globalPid) (globalTid
-- >> 24 << 24 for host-side rows), and an import made one workflow per capture, in capture order
-- (the parallel import writes each file's metadata in file order). So where every capture of the
-- file is imported and there are as many workflows as captures, the k-th capture's process rows
-- are split out of a shared row and pointed at the k-th workflow. Only pids seen in more than one
-- capture are split; a split row keeps the host and command of the shared one, takes its
-- capture's window as its first/last time, and leaves rank and world size unknown (they were the
-- last file's). A capture that already has its own row of the pid (written by schema 3 or later)
-- keeps it. Files of another shape (a daemon's host database: one workflow per job, windows of
-- the same processes) keep the file-wide rows, which apply to every capture of the file that has
-- no row of its own.
--
-- Cost: a file without file-wide rows leaves split_capture_workflow empty, and every arm below
-- then looks captures up in the (captureId, ...) indexes instead of reading the event tables.
CREATE TEMP TABLE split_capture_workflow AS
  SELECT c.id AS captureId, w.id AS workflow_id
  FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS k FROM captures) AS c
  JOIN (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS k FROM workflows) AS w ON w.k = c.k
  WHERE EXISTS (SELECT 1 FROM processes WHERE captureId IS NULL)
    AND (SELECT count(*) FROM captures) = (SELECT count(*) FROM workflows)
    AND NOT EXISTS (SELECT 1 FROM captures WHERE kind <> 'imported');
CREATE TEMP TABLE split_seen AS
  SELECT DISTINCT captureId, globalPid FROM (
    SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, globalPid FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, globalPid FROM iterations
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, globalPid FROM memory_events
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, (globalTid >> 24) << 24 FROM CUPTI_ACTIVITY_KIND_RUNTIME
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, (globalTid >> 24) << 24 FROM cpu_ops
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow)
    UNION ALL SELECT captureId, (globalTid >> 24) << 24 FROM NVTX_EVENTS
      WHERE captureId IN (SELECT captureId FROM split_capture_workflow))
  WHERE globalPid IS NOT NULL;
DELETE FROM split_seen WHERE globalPid NOT IN
  (SELECT globalPid FROM split_seen GROUP BY globalPid HAVING count(*) > 1);
INSERT INTO processes(captureId, globalPid, pid, host_id, workflow_id, rank, world_size, command, start_ns, end_ns)
  SELECT s.captureId, p.globalPid, p.pid, p.host_id, m.workflow_id,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.rank END,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.world_size END,
         p.command,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.start_ns ELSE c.start_ns END,
         CASE WHEN m.workflow_id = p.workflow_id THEN p.end_ns ELSE c.end_ns END
  FROM split_seen AS s
  JOIN processes AS p ON p.captureId IS NULL AND p.globalPid = s.globalPid
  JOIN split_capture_workflow AS m ON m.captureId = s.captureId
  JOIN captures AS c ON c.id = s.captureId
  WHERE NOT EXISTS (SELECT 1 FROM processes AS own
                    WHERE own.captureId = s.captureId AND own.globalPid = s.globalPid);
DELETE FROM processes WHERE captureId IS NULL
  AND globalPid IN (SELECT globalPid FROM split_seen);
DROP TABLE split_seen;
DROP TABLE split_capture_workflow;
