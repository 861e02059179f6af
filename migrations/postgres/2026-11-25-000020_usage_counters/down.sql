DROP TABLE usage_counters;
