CREATE TABLE `settings` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `audit_log` ADD `surface` text;--> statement-breakpoint
ALTER TABLE `auth_failures` ADD `count` integer DEFAULT 1 NOT NULL;