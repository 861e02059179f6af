DROP TABLE blob_chunks;
DROP TABLE blob_objects;
