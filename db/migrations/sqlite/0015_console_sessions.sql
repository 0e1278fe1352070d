CREATE TABLE `console_links` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`actor` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer
);
--> statement-breakpoint
CREATE TABLE `console_sessions` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`store_id` text NOT NULL,
	`actor` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`ended_at` integer
);
--> statement-breakpoint
CREATE INDEX `console_sessions_expiry_idx` ON `console_sessions` (`expires_at`);