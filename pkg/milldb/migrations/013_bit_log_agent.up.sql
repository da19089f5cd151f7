-- The agent of each bit check (bitlog.Agent): the Workman instance that
-- made it and Mill's version, written by the processor from its own
-- configuration (never from a queue message). What the evidence log names
-- as the agent of a fixity check. Rows written before this migration have
-- none (NULL). Adding nullable columns is a catalog change.
ALTER TABLE bit_log
    ADD COLUMN agent_instance text,
    ADD COLUMN agent_version  text;
