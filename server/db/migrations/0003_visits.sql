CREATE TABLE `customer_consents` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` text NOT NULL,
	`customer_id` text NOT NULL,
	`consent` integer NOT NULL,
	`reason` text NOT NULL,
	`at` text NOT NULL,
	`actor_id` text,
	`actor_email` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`actor_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `customer_consents_customer_idx` ON `customer_consents` (`customer_id`,`at`);--> statement-breakpoint
CREATE TABLE `customers` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`number` integer NOT NULL,
	`recognition_model` text DEFAULT '' NOT NULL,
	`template` blob,
	`template_count` integer DEFAULT 0 NOT NULL,
	`full_name` text DEFAULT '' NOT NULL,
	`phone` text DEFAULT '' NOT NULL,
	`email` text DEFAULT '' NOT NULL,
	`gender` text DEFAULT '' NOT NULL,
	`date_of_birth` text DEFAULT '' NOT NULL,
	`notes` text DEFAULT '' NOT NULL,
	`consent` integer DEFAULT false NOT NULL,
	`consent_changed_at` text,
	`profile_updated_at` text,
	`visit_count` integer DEFAULT 0 NOT NULL,
	`first_seen_at` text,
	`last_seen_at` text,
	`created_at` text NOT NULL,
	`erased_at` text,
	`merged_into` text,
	`merged_at` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `customers_company_number_uq` ON `customers` (`company_id`,`number`);--> statement-breakpoint
CREATE INDEX `customers_company_seen_idx` ON `customers` (`company_id`,`last_seen_at`);--> statement-breakpoint
CREATE TABLE `do_not_enrol` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` text NOT NULL,
	`recognition_model` text NOT NULL,
	`sketch` blob NOT NULL,
	`expires_at` text NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `do_not_enrol_company_idx` ON `do_not_enrol` (`company_id`,`recognition_model`);--> statement-breakpoint
CREATE TABLE `face_images` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`shop_id` text,
	`customer_id` text,
	`visit_id` text,
	`path` text NOT NULL,
	`created_at` text NOT NULL,
	`linked_at` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `face_images_customer_idx` ON `face_images` (`customer_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `face_images_unlinked_idx` ON `face_images` (`created_at`) WHERE visit_id is null;--> statement-breakpoint
CREATE TABLE `visits` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`visit_id` text NOT NULL,
	`company_id` text NOT NULL,
	`shop_id` text NOT NULL,
	`camera_id` text NOT NULL,
	`occurred_at` text NOT NULL,
	`received_at` text NOT NULL,
	`customer_id` text,
	`is_new_visitor` integer DEFAULT false NOT NULL,
	`similarity` real,
	`quality` real NOT NULL,
	`passed_gate` integer NOT NULL,
	`recognition_model` text,
	`gender` text,
	`age` real,
	`emotion` text,
	`face_image_id` text,
	`track_id` text,
	`merged_from` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `visits_company_visit_uq` ON `visits` (`company_id`,`visit_id`);--> statement-breakpoint
CREATE INDEX `visits_company_idx` ON `visits` (`company_id`);--> statement-breakpoint
CREATE INDEX `visits_shop_idx` ON `visits` (`shop_id`);--> statement-breakpoint
CREATE INDEX `visits_customer_idx` ON `visits` (`customer_id`,`occurred_at`);--> statement-breakpoint
CREATE TABLE `purchases` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`customer_id` text NOT NULL,
	`shop_id` text,
	`amount_minor` integer NOT NULL,
	`currency` text NOT NULL,
	`items` text NOT NULL,
	`source` text DEFAULT '' NOT NULL,
	`notes` text DEFAULT '' NOT NULL,
	`created_at` text NOT NULL,
	`created_by` text,
	`created_by_email` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `purchases_company_idx` ON `purchases` (`company_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `purchases_customer_idx` ON `purchases` (`customer_id`);