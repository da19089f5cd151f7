DROP TABLE IF EXISTS bit_run_space;
