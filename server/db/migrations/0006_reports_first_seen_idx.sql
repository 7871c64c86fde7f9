-- Reports (server/reports, docs/reports.md). Written by hand (drizzle-kit generate --custom), like 0004: the report
-- queries name this index with INDEXED BY (SQLite would rather read the table through the primary key's index).
-- A customer's first visit ever by id: one shop's "new" customers of a bucket look up each visit's customer here,
-- a few dozen bytes per customer, instead of reading customer rows that carry a 2 KiB template.
CREATE INDEX `customers_id_first_idx` ON `customers` (`id`,`first_seen_at`);
