CREATE TABLE `businesses` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `businesses_company_id_unique` ON `businesses` (`company_id`);--> statement-breakpoint
CREATE TABLE `idp_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`ip` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `idp_attempts_key_idx` ON `idp_attempts` (`kind`,`key`,`at`);--> statement-breakpoint
CREATE INDEX `idp_attempts_ip_idx` ON `idp_attempts` (`kind`,`ip`,`at`);--> statement-breakpoint
CREATE TABLE `idp_links` (
	`provider_uid` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`method` text NOT NULL,
	`created_at` text NOT NULL,
	`last_sign_in_at` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `idp_links_user_idx` ON `idp_links` (`user_id`,`method`);--> statement-breakpoint
CREATE TABLE `idp_revocations` (
	`provider_uid` text PRIMARY KEY NOT NULL,
	`revoked_before` integer NOT NULL,
	`revoked_at` text NOT NULL
);
--> statement-breakpoint
ALTER TABLE `users` ADD `phone` text;--> statement-breakpoint
CREATE UNIQUE INDEX `users_company_phone_active_idx` ON `users` (`company_id`,`phone`) WHERE active = 1 and phone is not null;--> statement-breakpoint
CREATE INDEX `users_phone_idx` ON `users` (`phone`);