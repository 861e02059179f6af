DROP INDEX invoices_pending_by_due;
DROP TABLE invoices;
DROP TABLE api_calls;
DROP TABLE rate_budgets;
DROP TABLE billing_plans;
