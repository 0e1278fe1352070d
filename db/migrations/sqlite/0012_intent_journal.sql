ALTER TABLE `idempotency_keys` ADD `owner` text;--> statement-breakpoint
ALTER TABLE `intents` ADD `basis` text;--> statement-breakpoint
ALTER TABLE `intents` ADD `executor` text;--> statement-breakpoint
ALTER TABLE `intents` ADD `execute_key` text;