DROP TABLE IF EXISTS space_stats;
