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
-- Repair of what schema 2 merged, from the rows (split_process_rows.sql; the v5 -> v6 step runs it
-- again for files this step migrated before it had the repair).
.read split_process_rows.sql
