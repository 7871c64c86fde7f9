CREATE TABLE `idp_codes` (
	`id` text PRIMARY KEY NOT NULL,
	`phone` text NOT NULL,
	`code_mac` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `idp_codes_expires_idx` ON `idp_codes` (`expires_at`);--> statement-breakpoint
CREATE TABLE `idp_refresh_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`uid` text NOT NULL,
	`sign_in_provider` text NOT NULL,
	`phone` text,
	`auth_time` integer NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	FOREIGN KEY (`uid`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `idp_refresh_tokens_uid_idx` ON `idp_refresh_tokens` (`uid`);