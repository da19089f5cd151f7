DROP TABLE IF EXISTS content_index;
