CREATE TABLE "platform_links" (
	"store_id" text PRIMARY KEY NOT NULL,
	"token_sealed" text,
	"token_expires_at" bigint,
	"token_obtained_at" bigint,
	"token_scope" text,
	"token_client_id" text,
	"token_generation" integer DEFAULT 0 NOT NULL,
	"renewal_lease_until" bigint,
	"renewal_owner" text,
	"last_renewal_at" bigint,
	"last_renewal_error" text,
	"answered_api_version" text,
	"answered_api_version_at" bigint,
	"pause_reason" text,
	"pause_code" text,
	"pause_message" text,
	"paused_since" bigint,
	"probes" integer DEFAULT 0 NOT NULL,
	"next_probe_at" bigint,
	"probe_lease_until" bigint,
	"last_probe_at" bigint,
	"resumed_at" bigint,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "stores" ADD COLUMN "credential_mode" text;--> statement-breakpoint
ALTER TABLE "stores" ADD COLUMN "client_id" text;--> statement-breakpoint
ALTER TABLE "stores" ADD COLUMN "client_secret_env" text;--> statement-breakpoint
UPDATE "stores" SET "credential_mode" = 'static' WHERE "admin_token_env" IS NOT NULL;