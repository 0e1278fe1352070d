PRAGMA foreign_keys=OFF;--> statement-breakpoint
-- Edited by hand: WITHOUT ROWID here and for usage_counters and event_stats below (drizzle cannot declare it).
-- Each row is then stored once, clustered on its primary key, instead of in the table plus a key index.
CREATE TABLE `__new_attempts` (
	`event_id` text NOT NULL,
	`number` integer NOT NULL,
	`destination` text NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer NOT NULL,
	`outcome` text NOT NULL,
	`http_status` integer,
	`code` text,
	`message` text,
	`retry_at` integer,
	PRIMARY KEY(`event_id`, `number`)
) WITHOUT ROWID;
--> statement-breakpoint
-- Edited by hand: an attempt recorded twice under one number (a handoff repeated after a lease ran out) keeps the first.
INSERT OR IGNORE INTO `__new_attempts`("event_id", "number", "destination", "started_at", "finished_at", "outcome", "http_status", "code", "message", "retry_at") SELECT "event_id", "number", "destination", "started_at", "finished_at", "outcome", "http_status", "code", "message", "retry_at" FROM `attempts` ORDER BY "started_at";--> statement-breakpoint
DROP TABLE `attempts`;--> statement-breakpoint
ALTER TABLE `__new_attempts` RENAME TO `attempts`;--> statement-breakpoint
CREATE TABLE `__new_usage_counters` (
	`store_id` text NOT NULL,
	`meter` text NOT NULL,
	`period_start` integer NOT NULL,
	`used` integer NOT NULL,
	PRIMARY KEY(`store_id`, `meter`, `period_start`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_usage_counters`("store_id", "meter", "period_start", "used") SELECT "store_id", "meter", "period_start", "used" FROM `usage_counters`;--> statement-breakpoint
DROP TABLE `usage_counters`;--> statement-breakpoint
ALTER TABLE `__new_usage_counters` RENAME TO `usage_counters`;--> statement-breakpoint
CREATE TABLE `__new_event_stats` (
	`store_id` text NOT NULL,
	`width` integer DEFAULT 300000 NOT NULL,
	`bucket` integer NOT NULL,
	`metric` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`store_id`, `width`, `bucket`, `metric`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_event_stats`("store_id", "width", "bucket", "metric", "n") SELECT "store_id", "width", "bucket", "metric", "n" FROM `event_stats`;--> statement-breakpoint
DROP TABLE `event_stats`;--> statement-breakpoint
ALTER TABLE `__new_event_stats` RENAME TO `event_stats`;--> statement-breakpoint
PRAGMA foreign_keys=ON;
