CREATE TABLE `oauth_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`grant_id` text NOT NULL,
	`family_id` text NOT NULL,
	`client_id` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`code_challenge` text NOT NULL,
	`resource` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer
);
--> statement-breakpoint
CREATE INDEX `oauth_codes_expiry_idx` ON `oauth_codes` (`expires_at`);--> statement-breakpoint
CREATE TABLE `oauth_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`user_code` text NOT NULL,
	`client_id` text NOT NULL,
	`client_name` text NOT NULL,
	`client_uri` text,
	`redirect_uri` text NOT NULL,
	`resource` text NOT NULL,
	`scopes` text NOT NULL,
	`code_challenge` text NOT NULL,
	`state` text,
	`status` text NOT NULL,
	`grant_id` text,
	`store_id` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oauth_requests_user_code_idx` ON `oauth_requests` (`user_code`);--> statement-breakpoint
CREATE INDEX `oauth_requests_expiry_idx` ON `oauth_requests` (`expires_at`);--> statement-breakpoint
CREATE TABLE `oauth_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`grant_id` text NOT NULL,
	`family_id` text NOT NULL,
	`client_id` text NOT NULL,
	`resource` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `oauth_tokens_family_idx` ON `oauth_tokens` (`family_id`);--> statement-breakpoint
CREATE INDEX `oauth_tokens_grant_idx` ON `oauth_tokens` (`grant_id`);--> statement-breakpoint
CREATE INDEX `oauth_tokens_expiry_idx` ON `oauth_tokens` (`expires_at`);--> statement-breakpoint
ALTER TABLE `grants` ADD `client_id` text;--> statement-breakpoint
ALTER TABLE `grants` ADD `client_name` text;