ALTER TABLE bit_log DROP COLUMN IF EXISTS agent_version, DROP COLUMN IF EXISTS agent_instance;
