-- PostgreSQL's consent batch function takes its counter rows in order (issue 31 §6). SQLite
-- creates sessions through its single writer, where no two transactions hold rows at once:
-- nothing to change here.
SELECT 1;
