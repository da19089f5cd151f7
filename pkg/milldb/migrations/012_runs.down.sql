DROP TABLE run_outcome;
DROP TABLE run_record;
