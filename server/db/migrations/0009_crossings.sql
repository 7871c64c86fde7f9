CREATE TABLE `crossings` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` text NOT NULL,
	`shop_id` text NOT NULL,
	`crossing_id` text NOT NULL,
	`camera_id` text NOT NULL,
	`camera_uuid` text,
	`direction` text NOT NULL,
	`occurred_at` text NOT NULL,
	`received_at` text NOT NULL,
	`track_id` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`camera_uuid`) REFERENCES `cameras`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `crossings_shop_crossing_uq` ON `crossings` (`shop_id`,`crossing_id`);--> statement-breakpoint
CREATE INDEX `crossings_shop_time_idx` ON `crossings` (`shop_id`,`occurred_at`,`direction`);--> statement-breakpoint
CREATE INDEX `crossings_shop_direction_time_idx` ON `crossings` (`shop_id`,`direction`,`occurred_at`);--> statement-breakpoint
CREATE INDEX `crossings_company_idx` ON `crossings` (`company_id`);