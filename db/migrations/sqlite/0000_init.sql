CREATE TABLE `attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`event_id` text NOT NULL,
	`number` integer NOT NULL,
	`destination` text NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer NOT NULL,
	`outcome` text NOT NULL,
	`http_status` integer,
	`code` text,
	`message` text,
	`retry_at` integer
);
--> statement-breakpoint
CREATE INDEX `attempts_event_idx` ON `attempts` (`event_id`,`number`);--> statement-breakpoint
CREATE TABLE `auth_failures` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`code` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `auth_failures_endpoint_idx` ON `auth_failures` (`endpoint_id`,`at`);--> statement-breakpoint
CREATE INDEX `auth_failures_store_idx` ON `auth_failures` (`store_id`,`at`);--> statement-breakpoint
CREATE TABLE `endpoint_versions` (
	`endpoint_id` text NOT NULL,
	`version` integer NOT NULL,
	`config` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`endpoint_id`, `version`),
	FOREIGN KEY (`endpoint_id`) REFERENCES `endpoints`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`trigger_variant` text NOT NULL,
	`resource_id_path` text,
	`related_resource_id_path` text,
	`required_paths` text NOT NULL,
	`sender_profile` text,
	`auth_mode` text NOT NULL,
	`header_name` text NOT NULL,
	`secret_sealed` text NOT NULL,
	`secret_last4` text NOT NULL,
	`previous_secret_sealed` text,
	`previous_secret_expires_at` integer,
	`source_label` text NOT NULL,
	`event_type` text,
	`config_version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `endpoints_store_idx` ON `endpoints` (`store_id`,`id`);--> statement-breakpoint
CREATE TABLE `event_bodies` (
	`event_id` text PRIMARY KEY NOT NULL,
	`body` blob NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `event_bodies_expires_idx` ON `event_bodies` (`expires_at`);--> statement-breakpoint
CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`receipt_id` text NOT NULL,
	`store_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`config_version` integer NOT NULL,
	`outcome` text NOT NULL,
	`code` text,
	`external_event_id` text,
	`event_type` text,
	`is_test` integer NOT NULL,
	`duplicate_of` text,
	`resource_id` text,
	`related_resource_id` text,
	`body_bytes` integer NOT NULL,
	`body_retention` text NOT NULL,
	`received_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_attempt_at` integer,
	`next_attempt_at` integer,
	`lease_until` integer,
	`delivered_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_receipt_idx` ON `events` (`receipt_id`);--> statement-breakpoint
CREATE INDEX `events_store_idx` ON `events` (`store_id`,`id`);--> statement-breakpoint
CREATE INDEX `events_store_endpoint_idx` ON `events` (`store_id`,`endpoint_id`,`id`);--> statement-breakpoint
CREATE INDEX `events_store_outcome_idx` ON `events` (`store_id`,`outcome`,`id`);--> statement-breakpoint
CREATE INDEX `events_dedupe_idx` ON `events` (`endpoint_id`,`external_event_id`,`received_at`) WHERE "events"."external_event_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `events_due_idx` ON `events` (`next_attempt_at`) WHERE "events"."next_attempt_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `grants` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`tier` text NOT NULL,
	`scopes` text NOT NULL,
	`label` text NOT NULL,
	`token_hash` text NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `grants_token_hash_idx` ON `grants` (`token_hash`);--> statement-breakpoint
CREATE INDEX `grants_store_idx` ON `grants` (`store_id`,`id`);--> statement-breakpoint
CREATE TABLE `stores` (
	`id` text PRIMARY KEY NOT NULL,
	`platform_key` text NOT NULL,
	`platform_account_id` text NOT NULL,
	`shop_domain` text NOT NULL,
	`installation_id` text NOT NULL,
	`plan` text NOT NULL,
	`billing_status` text NOT NULL,
	`destination` text NOT NULL,
	`admin_token_env` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `stores_shop_domain_unique` ON `stores` (`shop_domain`);