DROP INDEX `events_store_outcome_idx`;--> statement-breakpoint
CREATE INDEX `events_store_outcome_idx` ON `events` (`store_id`,`outcome`,`id`) WHERE "events"."outcome" <> 'delivered';