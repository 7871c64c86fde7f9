CREATE TABLE `sightings` (
	`company_id` text NOT NULL,
	`visit_id` text NOT NULL,
	`received_at` text NOT NULL,
	PRIMARY KEY(`company_id`, `visit_id`),
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `customers` ADD `staff` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `customers` ADD `staff_changed_at` text;--> statement-breakpoint
CREATE INDEX `customers_company_staff_idx` ON `customers` (`company_id`,`last_seen_at`) WHERE staff = 1;--> statement-breakpoint
ALTER TABLE `visits` ADD `last_seen_at` text;--> statement-breakpoint
ALTER TABLE `visits` ADD `dwell_ms` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `visits` ADD `staff` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `visits_stay_idx` ON `visits` (`customer_id`,`shop_id`,`last_seen_at`);--> statement-breakpoint
-- Written by hand below (docs/visits-and-customers.md, docs/reports.md). Visits stored before stays keep their rows
-- (one per pass) and become stays of no length; their ids are the first sightings.
UPDATE `visits` SET `last_seen_at` = `occurred_at` WHERE `last_seen_at` IS NULL;--> statement-breakpoint
INSERT OR IGNORE INTO `sightings` (`company_id`, `visit_id`, `received_at`) SELECT `company_id`, `visit_id`, `received_at` FROM `visits`;--> statement-breakpoint
-- Reports read a shop's visits by time through one covering index; it now also holds staff and dwell.
DROP INDEX IF EXISTS `visits_shop_time_idx`;--> statement-breakpoint
CREATE INDEX `visits_shop_time_idx` ON `visits` (`shop_id`,`occurred_at`,`customer_id`,`passed_gate`,`staff`,`dwell_ms`);--> statement-breakpoint
-- Customers by first visit ever ("new"): staff are not customers of a report.
DROP INDEX IF EXISTS `customers_company_first_idx`;--> statement-breakpoint
CREATE INDEX `customers_company_first_idx` ON `customers` (`company_id`,`first_seen_at`) WHERE merged_into IS NULL AND staff = 0;
