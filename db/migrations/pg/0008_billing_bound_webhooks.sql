CREATE TABLE "app_subscriptions" (
	"subscription_id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"plan" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "shopify_webhook_effects" (
	"effect_key" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"webhook_id" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "app_subscriptions_store_idx" ON "app_subscriptions" USING btree ("store_id","created_at");