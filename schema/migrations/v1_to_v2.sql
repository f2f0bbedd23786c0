-- v1 → v2: captures gained a human-readable note; external_correlation was added; event_extent stores per-table maximum durations
-- for overlap queries. Existing rows get their extents computed here.
ALTER TABLE captures ADD COLUMN note TEXT;
CREATE TABLE IF NOT EXISTS external_correlation (
  captureId     INTEGER NOT NULL,
  correlationId INTEGER NOT NULL,
  externalKind  INTEGER NOT NULL,
  externalId    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS event_extent (
  tbl          TEXT NOT NULL,
  captureId    INTEGER NOT NULL,
  max_duration INTEGER NOT NULL,
  PRIMARY KEY (tbl, captureId)
);
INSERT OR REPLACE INTO event_extent SELECT 'CUPTI_ACTIVITY_KIND_KERNEL', captureId, MAX(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY captureId;
INSERT OR REPLACE INTO event_extent SELECT 'CUPTI_ACTIVITY_KIND_MEMCPY', captureId, MAX(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY captureId;
INSERT OR REPLACE INTO event_extent SELECT 'CUPTI_ACTIVITY_KIND_MEMSET', captureId, MAX(end - start) FROM CUPTI_ACTIVITY_KIND_MEMSET GROUP BY captureId;
INSERT OR REPLACE INTO event_extent SELECT 'CUPTI_ACTIVITY_KIND_RUNTIME', captureId, MAX(end - start) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY captureId;
INSERT OR REPLACE INTO event_extent SELECT 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION', captureId, MAX(end - start) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION GROUP BY captureId;
INSERT OR REPLACE INTO event_extent SELECT 'NVTX_EVENTS', captureId, MAX(COALESCE(end, start) - start) FROM NVTX_EVENTS GROUP BY captureId;
INSERT OR REPLACE INTO event_extent SELECT 'cpu_ops', captureId, MAX(end - start) FROM cpu_ops GROUP BY captureId;
