-- Back to migration 003's results: an EMPTY report is the SUCCESS of no
-- item the earlier code wrote.
ALTER TABLE bit_report DROP CONSTRAINT bit_report_empty_check;
ALTER TABLE bit_report DROP CONSTRAINT bit_report_success_check;
ALTER TABLE bit_report DROP CONSTRAINT bit_report_result_check;
UPDATE bit_report SET result = 'SUCCESS' WHERE result = 'EMPTY';
ALTER TABLE bit_report ADD CONSTRAINT bit_report_result_check CHECK (result IN ('SUCCESS', 'FAILURE', 'ERROR'));
DROP TABLE IF EXISTS bit_run_space;
