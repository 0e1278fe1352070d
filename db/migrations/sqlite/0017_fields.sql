ALTER TABLE `attempts` ADD `field_counts` text;--> statement-breakpoint
ALTER TABLE `endpoints` ADD `fields` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `endpoints` ADD `include_body` integer DEFAULT 0 NOT NULL;