DROP INDEX IF EXISTS bit_log_checked_idx;
