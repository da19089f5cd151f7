-- Nothing: the tables are DuraCloud's, read by DuraStore and DurAdmin, and
-- Mill never drops them.
DO 0;
