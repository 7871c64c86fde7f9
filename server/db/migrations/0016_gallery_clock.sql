CREATE TABLE `gallery_clocks` (
	`company_id` text PRIMARY KEY NOT NULL,
	`tick` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `customers` ADD `gallery_tick` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `customers_gallery_tick_idx` ON `customers` (`company_id`,`gallery_tick`);