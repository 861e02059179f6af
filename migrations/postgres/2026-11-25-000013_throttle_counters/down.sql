DROP TABLE throttle_counters;
