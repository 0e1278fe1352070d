ALTER TABLE `platform_links` ADD `budget_max` real;--> statement-breakpoint
ALTER TABLE `platform_links` ADD `budget_available` real;--> statement-breakpoint
ALTER TABLE `platform_links` ADD `budget_rate` real;--> statement-breakpoint
ALTER TABLE `platform_links` ADD `budget_cost` real;--> statement-breakpoint
ALTER TABLE `platform_links` ADD `budget_at` integer;--> statement-breakpoint
ALTER TABLE `platform_links` ADD `budget_horizon` integer;--> statement-breakpoint
ALTER TABLE `platform_links` ADD `budget_version` integer DEFAULT 0 NOT NULL;