CREATE TABLE `alert_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`alert_seq` integer NOT NULL,
	`event` text NOT NULL,
	`channel` text NOT NULL,
	`target` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_at` text NOT NULL,
	`delivered_at` text,
	`failed_at` text,
	`last_error` text,
	FOREIGN KEY (`alert_seq`) REFERENCES `alerts`(`seq`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `alert_deliveries_due_idx` ON `alert_deliveries` (`next_at`) WHERE delivered_at is null and failed_at is null;--> statement-breakpoint
CREATE TABLE `alert_settings` (
	`company_id` text PRIMARY KEY NOT NULL,
	`rules` text NOT NULL,
	`email_to` text,
	`webhook_url` text,
	`webhook_secret` text,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `alerts` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`company_id` text NOT NULL,
	`shop_id` text NOT NULL,
	`camera_uuid` text,
	`kind` text NOT NULL,
	`subject` text NOT NULL,
	`message` text NOT NULL,
	`raised_at` text NOT NULL,
	`cleared_at` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `alerts_id_unique` ON `alerts` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `alerts_open_subject_uq` ON `alerts` (`company_id`,`subject`) WHERE cleared_at is null;--> statement-breakpoint
CREATE INDEX `alerts_company_seq_idx` ON `alerts` (`company_id`,`seq`);--> statement-breakpoint
CREATE TABLE `report_subscriptions` (
	`user_id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`frequency` text NOT NULL,
	`last_daily` text,
	`last_weekly` text,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `shops` ADD `opening_hours` text;--> statement-breakpoint
ALTER TABLE `shops` ADD `region` text;--> statement-breakpoint
ALTER TABLE `shops` ADD `occupancy_limit` integer;--> statement-breakpoint
CREATE INDEX `shops_company_region_idx` ON `shops` (`company_id`,`region`);