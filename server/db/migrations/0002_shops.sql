CREATE TABLE `enrolment_codes` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`shop_id` text NOT NULL,
	`code_hash` text NOT NULL,
	`label` text DEFAULT '' NOT NULL,
	`requested_by` text,
	`requested_by_email` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`used_at` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `enrolment_codes_code_hash_unique` ON `enrolment_codes` (`code_hash`);--> statement-breakpoint
CREATE INDEX `enrolment_codes_shop_idx` ON `enrolment_codes` (`shop_id`);--> statement-breakpoint
CREATE TABLE `shops` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`timezone` text NOT NULL,
	`created_at` text NOT NULL,
	`broker_username` text NOT NULL,
	`broker_secret` text,
	`agent_token_hash` text,
	`enrolled_at` text,
	`agent_hostname` text,
	`last_heartbeat_at` text,
	`last_event_at` text,
	`agent_version` text DEFAULT '' NOT NULL,
	`recognition_model` text DEFAULT '' NOT NULL,
	`recognition_running` integer,
	`recognition_problem` text,
	`cameras_up` integer DEFAULT 0 NOT NULL,
	`cameras_total` integer DEFAULT 0 NOT NULL,
	`queued` integer DEFAULT 0 NOT NULL,
	`dropped` integer DEFAULT 0 NOT NULL,
	`fraction_below_gate` real,
	`worst_camera_id` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `shops_broker_username_unique` ON `shops` (`broker_username`);--> statement-breakpoint
CREATE UNIQUE INDEX `shops_agent_token_hash_unique` ON `shops` (`agent_token_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `shops_company_slug_uq` ON `shops` (`company_id`,`slug`);--> statement-breakpoint
CREATE TABLE `camera_checks` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`shop_id` text NOT NULL,
	`camera_uuid` text NOT NULL,
	`kind` text NOT NULL,
	`seconds` integer,
	`state` text NOT NULL,
	`requested_at` text NOT NULL,
	`requested_by` text,
	`release_at` text NOT NULL,
	`claimed_at` text,
	`answered_at` text,
	`verdict` text,
	`faces` integer,
	`fraction_below_gate` real,
	`reason` text,
	`has_image` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`camera_uuid`) REFERENCES `cameras`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `camera_checks_camera_idx` ON `camera_checks` (`camera_uuid`,`requested_at`);--> statement-breakpoint
CREATE INDEX `camera_checks_shop_state_idx` ON `camera_checks` (`shop_id`,`state`);--> statement-breakpoint
CREATE TABLE `cameras` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`shop_id` text NOT NULL,
	`camera_id` text NOT NULL,
	`label` text NOT NULL,
	`host` text NOT NULL,
	`port` integer NOT NULL,
	`path` text NOT NULL,
	`username` text NOT NULL,
	`password` text,
	`max_width` integer NOT NULL,
	`tuning` text NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`deleted_at` text,
	`connected` integer,
	`connection_reason` text,
	`state_reported_at` text,
	`last_seen_at` text,
	`snapshot_at` text,
	`last_check_id` text,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`shop_id`) REFERENCES `shops`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cameras_shop_camera_id_uq` ON `cameras` (`shop_id`,`camera_id`) WHERE deleted_at is null;--> statement-breakpoint
CREATE INDEX `cameras_company_idx` ON `cameras` (`company_id`);