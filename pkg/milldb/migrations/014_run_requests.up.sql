-- The AWS requests a run's tasks made, counted by Workman (pkg/runs:
-- Outcome.Requests, from pkg/awsconfig's counting middleware, never from
-- a task message): {"service Op": count}, summed over every recorded
-- attempt in the transaction that records its outcome. Runs recorded
-- before this migration count none ({}). Adding a column with a constant
-- default is a catalog change.
ALTER TABLE run_record ADD COLUMN requests jsonb NOT NULL DEFAULT '{}'::jsonb;
