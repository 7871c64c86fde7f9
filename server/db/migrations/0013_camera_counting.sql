ALTER TABLE `cameras` ADD `door_stats` text;--> statement-breakpoint
ALTER TABLE `cameras` ADD `door_stats_at` text;--> statement-breakpoint
CREATE INDEX `crossings_camera_time_idx` ON `crossings` (`camera_uuid`,`occurred_at`);--> statement-breakpoint
-- Camera roles (docs/shops-and-cameras.md): a camera that already had a counting line kept recognising faces, so it
-- keeps doing both; an absent role now means `door` with a line, `faces` without.
UPDATE `cameras` SET `tuning` = json_set(`tuning`, '$.role', 'both') WHERE json_type(`tuning`, '$.line') = 'object' AND json_type(`tuning`, '$.role') IS NULL;
