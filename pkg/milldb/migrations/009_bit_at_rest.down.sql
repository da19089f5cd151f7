DROP TABLE IF EXISTS bit_at_rest_object;
DROP TABLE IF EXISTS bit_at_rest_job;
