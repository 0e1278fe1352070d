PRAGMA foreign_keys=OFF;--> statement-breakpoint
-- Edited by hand: bodies get an integer key in the order they expire (the order the sweep deletes them) and the
-- event row holds it; the text key and the expiry index go. Each ingest commit then appends to one B-tree for
-- the bodies instead of three.
CREATE TABLE `__new_event_bodies` (
	`key` integer PRIMARY KEY NOT NULL,
	`event_id` text NOT NULL,
	`expires_at` integer NOT NULL,
	`body` blob NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_event_bodies`("event_id", "expires_at", "body") SELECT "event_id", "expires_at", "body" FROM `event_bodies` ORDER BY "expires_at", "event_id";--> statement-breakpoint
ALTER TABLE `events` ADD `body_key` integer;--> statement-breakpoint
CREATE INDEX `__new_event_bodies_event_tmp` ON `__new_event_bodies` (`event_id`);--> statement-breakpoint
UPDATE `events` SET `body_key` = (SELECT `key` FROM `__new_event_bodies` b WHERE b.`event_id` = `events`.`id`) WHERE `id` IN (SELECT `event_id` FROM `__new_event_bodies`);--> statement-breakpoint
DROP INDEX `__new_event_bodies_event_tmp`;--> statement-breakpoint
DROP TABLE `event_bodies`;--> statement-breakpoint
ALTER TABLE `__new_event_bodies` RENAME TO `event_bodies`;--> statement-breakpoint
PRAGMA foreign_keys=ON;
