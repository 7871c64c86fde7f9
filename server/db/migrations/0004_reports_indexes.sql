-- Reports (server/reports, docs/reports.md). Written by hand (drizzle-kit generate --custom): the report queries
-- name these indexes with INDEXED BY. drizzle-kit compares the schema files with its snapshots, never with the
-- database, so later generated migrations leave them alone.
-- A shop's visits by time, covering what footfall counts (a company's visits are read shop by shop through it).
CREATE INDEX `visits_shop_time_idx` ON `visits` (`shop_id`,`occurred_at`,`customer_id`,`passed_gate`);--> statement-breakpoint
-- Customers by their first visit ever ("new" in a bucket); merged-away customers keep first_seen_at and are left out.
CREATE INDEX `customers_company_first_idx` ON `customers` (`company_id`,`first_seen_at`) WHERE merged_into IS NULL;
