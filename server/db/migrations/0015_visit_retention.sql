CREATE TABLE `footfall_counts` (
	`shop_id` text NOT NULL,
	`slot_at` text NOT NULL,
	`day` text NOT NULL,
	`visits` integer DEFAULT 0 NOT NULL,
	`below_gate` integer DEFAULT 0 NOT NULL,
	`anon` integer DEFAULT 0 NOT NULL,
	`dwell_ms` integer DEFAULT 0 NOT NULL,
	`known` integer DEFAULT 0 NOT NULL,
	`fresh` integer DEFAULT 0 NOT NULL,
	`known_hour` integer DEFAULT 0 NOT NULL,
	`fresh_hour` integer DEFAULT 0 NOT NULL,
	`entries` integer DEFAULT 0 NOT NULL,
	`exits` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`shop_id`, `slot_at`),
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE cascade
);
