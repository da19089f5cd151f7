-- The bit log by the time of each check, across runs: what the evidence
-- appender reads (bitlog.Checked) to derive the fixity check events.
CREATE INDEX bit_log_checked_idx ON bit_log (checked_at);
