PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_event_stats` (
	`store_id` text NOT NULL,
	`width` integer DEFAULT 300000 NOT NULL,
	`bucket` integer NOT NULL,
	`metric` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`store_id`, `width`, `bucket`, `metric`)
);
--> statement-breakpoint
INSERT INTO `__new_event_stats`("store_id", "width", "bucket", "metric", "n") SELECT "store_id", 300000, "bucket", "metric", "n" FROM `event_stats`;--> statement-breakpoint
DROP TABLE `event_stats`;--> statement-breakpoint
ALTER TABLE `__new_event_stats` RENAME TO `event_stats`;--> statement-breakpoint
-- Edited by hand: the old rows were all 5-minute buckets; roll them up into the hourly and daily widths.
INSERT INTO `event_stats`("store_id", "width", "bucket", "metric", "n") SELECT "store_id", 3600000, "bucket" - "bucket" % 3600000, "metric", sum("n") FROM `event_stats` WHERE "width" = 300000 GROUP BY 1, 3, 4;--> statement-breakpoint
INSERT INTO `event_stats`("store_id", "width", "bucket", "metric", "n") SELECT "store_id", 86400000, "bucket" - "bucket" % 86400000, "metric", sum("n") FROM `event_stats` WHERE "width" = 300000 GROUP BY 1, 3, 4;--> statement-breakpoint
PRAGMA foreign_keys=ON;