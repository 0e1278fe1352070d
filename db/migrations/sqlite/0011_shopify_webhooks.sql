CREATE TABLE `shopify_webhooks` (
	`webhook_id` text PRIMARY KEY NOT NULL,
	`topic` text NOT NULL,
	`shop_domain` text NOT NULL,
	`api_version` text,
	`event_id` text,
	`triggered_at` integer,
	`received_at` integer NOT NULL,
	`processed_at` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`lease_until` integer,
	`last_error` text,
	`result` text,
	`payload_sealed` text
);
--> statement-breakpoint
CREATE INDEX `shopify_webhooks_pending_idx` ON `shopify_webhooks` (`received_at`) WHERE "shopify_webhooks"."processed_at" IS NULL;