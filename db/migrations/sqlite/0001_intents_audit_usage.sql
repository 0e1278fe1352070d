CREATE TABLE `audit_log` (
	`id` text PRIMARY KEY NOT NULL,
	`at` integer NOT NULL,
	`store_id` text,
	`grant_id` text,
	`actor_kind` text NOT NULL,
	`actor_label` text NOT NULL,
	`operation_id` text NOT NULL,
	`scopes` text NOT NULL,
	`target_id` text,
	`intent_id` text,
	`transition` text,
	`outcome` text NOT NULL,
	`status` integer NOT NULL,
	`error_code` text,
	`refusal_category` text,
	`refusal_code` text,
	`request_id` text
);
--> statement-breakpoint
CREATE INDEX `audit_store_idx` ON `audit_log` (`store_id`,`at`);--> statement-breakpoint
CREATE INDEX `audit_at_idx` ON `audit_log` (`at`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`store_id` text NOT NULL,
	`key` text NOT NULL,
	`operation_id` text NOT NULL,
	`request_hash` text NOT NULL,
	`status` integer NOT NULL,
	`response` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`store_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE `intents` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`grant_id` text NOT NULL,
	`kind` text NOT NULL,
	`operation_id` text NOT NULL,
	`target_id` text,
	`state` text NOT NULL,
	`input` text NOT NULL,
	`preview` text NOT NULL,
	`confirmation_hash` text,
	`confirmation_expires_at` integer,
	`result` text,
	`refusal` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `intents_store_idx` ON `intents` (`store_id`,`id`);--> statement-breakpoint
CREATE TABLE `records` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`kind` text NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer
);
--> statement-breakpoint
CREATE INDEX `records_store_kind_idx` ON `records` (`store_id`,`kind`,`id`);--> statement-breakpoint
CREATE TABLE `trigger_readiness` (
	`store_id` text NOT NULL,
	`handle` text NOT NULL,
	`has_enabled_flow` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`store_id`, `handle`)
);
--> statement-breakpoint
CREATE TABLE `usage_counters` (
	`store_id` text NOT NULL,
	`meter` text NOT NULL,
	`period_start` integer NOT NULL,
	`used` integer NOT NULL,
	PRIMARY KEY(`store_id`, `meter`, `period_start`)
);
