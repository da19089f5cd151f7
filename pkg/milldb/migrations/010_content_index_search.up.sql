-- Finding items by account, space and content-ID prefix across the stores
-- (the console's item search): keyset pagination
-- WHERE account=$1 AND space_id=$2 AND content_id >= $3 AND content_id < $4
-- AND (content_id, store_id) > ($5, $6) ORDER BY content_id, store_id LIMIT n
-- (store_id byte-wise, as content_id is).
-- Tombstones included: a deleted item can be found and restored.
CREATE INDEX content_index_search_idx
    ON content_index (account, space_id, content_id, store_id COLLATE "C");
