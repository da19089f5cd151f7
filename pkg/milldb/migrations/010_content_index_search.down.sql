DROP INDEX IF EXISTS content_index_search_idx;
