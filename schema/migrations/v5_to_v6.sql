-- v5 -> v6: no new table or column. Files the v2 -> v3 step migrated before that step split the
-- process rows schema 2 merged (a capture's pid pointing at the last capture's workflow) were
-- left with those rows through v3, v4 and v5; this step runs the same repair on them, and leaves
-- every other file as it is (split_process_rows.sql).
.read split_process_rows.sql
