DROP INDEX mandates_by_deadline;
DROP INDEX mandates_by_application;
DROP TABLE mandates;
