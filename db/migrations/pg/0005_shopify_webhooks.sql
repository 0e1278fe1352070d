CREATE TABLE "shopify_webhooks" (
	"webhook_id" text PRIMARY KEY NOT NULL,
	"topic" text NOT NULL,
	"shop_domain" text NOT NULL,
	"api_version" text,
	"event_id" text,
	"triggered_at" bigint,
	"received_at" bigint NOT NULL,
	"processed_at" bigint,
	"attempts" integer DEFAULT 0 NOT NULL,
	"lease_until" bigint,
	"last_error" text,
	"result" text,
	"payload_sealed" text
);
--> statement-breakpoint
CREATE INDEX "shopify_webhooks_pending_idx" ON "shopify_webhooks" USING btree ("received_at") WHERE "shopify_webhooks"."processed_at" IS NULL;