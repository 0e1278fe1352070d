CREATE TABLE `oauth_states` (
	`state_hash` text PRIMARY KEY NOT NULL,
	`shop_domain` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer
);
--> statement-breakpoint
ALTER TABLE `platform_links` ADD `refresh_sealed` text;--> statement-breakpoint
ALTER TABLE `platform_links` ADD `refresh_expires_at` integer;--> statement-breakpoint
ALTER TABLE `stores` ADD `uninstalled_at` integer;