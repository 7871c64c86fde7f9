CREATE TABLE `company_privacy` (
	`company_id` text PRIMARY KEY NOT NULL,
	`recognition` text DEFAULT 'all' NOT NULL,
	`template_retention_days` integer DEFAULT 90 NOT NULL,
	`visit_retention_days` integer,
	`updated_at` text,
	`updated_by` text,
	`sweep_requested_at` text,
	`swept_at` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `audit_company_id_idx` ON `audit_log` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_at_idx` ON `audit_log` (`at`);