ALTER TABLE "attempts" ADD COLUMN "field_counts" text;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "fields" text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "include_body" integer DEFAULT 0 NOT NULL;