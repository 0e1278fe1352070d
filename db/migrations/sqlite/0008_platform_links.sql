CREATE TABLE `platform_links` (
	`store_id` text PRIMARY KEY NOT NULL,
	`token_sealed` text,
	`token_expires_at` integer,
	`token_obtained_at` integer,
	`token_scope` text,
	`token_client_id` text,
	`token_generation` integer DEFAULT 0 NOT NULL,
	`renewal_lease_until` integer,
	`renewal_owner` text,
	`last_renewal_at` integer,
	`last_renewal_error` text,
	`answered_api_version` text,
	`answered_api_version_at` integer,
	`pause_reason` text,
	`pause_code` text,
	`pause_message` text,
	`paused_since` integer,
	`probes` integer DEFAULT 0 NOT NULL,
	`next_probe_at` integer,
	`probe_lease_until` integer,
	`last_probe_at` integer,
	`resumed_at` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `stores` ADD `credential_mode` text;--> statement-breakpoint
ALTER TABLE `stores` ADD `client_id` text;--> statement-breakpoint
ALTER TABLE `stores` ADD `client_secret_env` text;--> statement-breakpoint
UPDATE `stores` SET `credential_mode` = 'static' WHERE `admin_token_env` IS NOT NULL;