CREATE TABLE "oauth_states" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"shop_domain" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint
);
--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "refresh_sealed" text;--> statement-breakpoint
ALTER TABLE "platform_links" ADD COLUMN "refresh_expires_at" bigint;--> statement-breakpoint
ALTER TABLE "stores" ADD COLUMN "uninstalled_at" bigint;