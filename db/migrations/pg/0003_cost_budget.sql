ALTER TABLE "platform_links" ADD COLUMN "budget_max" double precision;--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "budget_available" double precision;--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "budget_rate" double precision;--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "budget_cost" double precision;--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "budget_at" bigint;--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "budget_horizon" bigint;--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "budget_version" integer DEFAULT 0 NOT NULL;