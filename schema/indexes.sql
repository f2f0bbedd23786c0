-- Indexes created by Writer::finish() after the bulk load (maintaining them row by row during
-- ingest is several times slower). Time-window queries use (captureId, [deviceId, streamId,] start)
-- together with event_extent.max_duration; see reader.h.
CREATE INDEX IF NOT EXISTS kernel_by_stream ON CUPTI_ACTIVITY_KIND_KERNEL(captureId, deviceId, streamId, start);
CREATE INDEX IF NOT EXISTS kernel_by_start ON CUPTI_ACTIVITY_KIND_KERNEL(captureId, start);
CREATE INDEX IF NOT EXISTS kernel_by_correlation ON CUPTI_ACTIVITY_KIND_KERNEL(correlationId);
CREATE INDEX IF NOT EXISTS memcpy_by_stream ON CUPTI_ACTIVITY_KIND_MEMCPY(captureId, deviceId, streamId, start);
CREATE INDEX IF NOT EXISTS memcpy_by_start ON CUPTI_ACTIVITY_KIND_MEMCPY(captureId, start);
CREATE INDEX IF NOT EXISTS memset_by_stream ON CUPTI_ACTIVITY_KIND_MEMSET(captureId, deviceId, streamId, start);
CREATE INDEX IF NOT EXISTS memset_by_start ON CUPTI_ACTIVITY_KIND_MEMSET(captureId, start);
CREATE INDEX IF NOT EXISTS runtime_by_start ON CUPTI_ACTIVITY_KIND_RUNTIME(captureId, start);
CREATE INDEX IF NOT EXISTS runtime_by_correlation ON CUPTI_ACTIVITY_KIND_RUNTIME(correlationId);
CREATE INDEX IF NOT EXISTS sync_by_start ON CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(captureId, start);
CREATE INDEX IF NOT EXISTS nvtx_by_start ON NVTX_EVENTS(captureId, start);
CREATE INDEX IF NOT EXISTS cpu_ops_by_start ON cpu_ops(captureId, start);
CREATE INDEX IF NOT EXISTS memory_events_by_ts ON memory_events(captureId, ts);
CREATE INDEX IF NOT EXISTS device_samples_by_ts ON device_samples(deviceId, ts);
CREATE INDEX IF NOT EXISTS external_correlation_by_id ON external_correlation(captureId, correlationId);
CREATE INDEX IF NOT EXISTS findings_by_capture ON findings(captureId);
