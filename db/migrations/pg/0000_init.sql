CREATE TABLE "attempts" (
	"event_id" text NOT NULL,
	"number" integer NOT NULL,
	"destination" text NOT NULL,
	"started_at" bigint NOT NULL,
	"finished_at" bigint NOT NULL,
	"outcome" text NOT NULL,
	"http_status" integer,
	"code" text,
	"message" text,
	"retry_at" bigint,
	CONSTRAINT "attempts_event_id_number_pk" PRIMARY KEY("event_id","number")
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" text PRIMARY KEY NOT NULL,
	"at" bigint NOT NULL,
	"store_id" text,
	"grant_id" text,
	"actor_kind" text NOT NULL,
	"actor_label" text NOT NULL,
	"operation_id" text NOT NULL,
	"scopes" text NOT NULL,
	"target_id" text,
	"intent_id" text,
	"transition" text,
	"outcome" text NOT NULL,
	"status" integer NOT NULL,
	"error_code" text,
	"refusal_category" text,
	"refusal_code" text,
	"request_id" text,
	"surface" text
);
--> statement-breakpoint
CREATE TABLE "auth_failures" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"code" text NOT NULL,
	"at" bigint NOT NULL,
	"count" integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "dedupe_keys" (
	"endpoint_id" text NOT NULL,
	"external_event_id" text NOT NULL,
	"event_id" text NOT NULL,
	"received_at" bigint NOT NULL,
	CONSTRAINT "dedupe_keys_endpoint_id_external_event_id_pk" PRIMARY KEY("endpoint_id","external_event_id")
);
--> statement-breakpoint
CREATE TABLE "endpoint_versions" (
	"endpoint_id" text NOT NULL,
	"version" integer NOT NULL,
	"config" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "endpoint_versions_endpoint_id_version_pk" PRIMARY KEY("endpoint_id","version")
);
--> statement-breakpoint
CREATE TABLE "endpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"trigger_variant" text NOT NULL,
	"resource_id_path" text,
	"related_resource_id_path" text,
	"required_paths" text NOT NULL,
	"sender_profile" text,
	"auth_mode" text NOT NULL,
	"header_name" text NOT NULL,
	"secret_sealed" text NOT NULL,
	"secret_last4" text NOT NULL,
	"previous_secret_sealed" text,
	"previous_secret_expires_at" bigint,
	"source_label" text NOT NULL,
	"event_type" text,
	"config_version" integer NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_bodies" (
	"event_id" text PRIMARY KEY NOT NULL,
	"body" "bytea" NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_stats" (
	"store_id" text NOT NULL,
	"width" bigint NOT NULL,
	"bucket" bigint NOT NULL,
	"metric" text NOT NULL,
	"shard" integer DEFAULT 0 NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "event_stats_store_id_width_bucket_metric_shard_pk" PRIMARY KEY("store_id","width","bucket","metric","shard")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"receipt_id" text NOT NULL,
	"store_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"config_version" integer NOT NULL,
	"outcome" text NOT NULL,
	"code" text,
	"external_event_id" text,
	"event_type" text,
	"is_test" boolean NOT NULL,
	"duplicate_of" text,
	"resource_id" text,
	"related_resource_id" text,
	"body_bytes" integer NOT NULL,
	"body_retention" text NOT NULL,
	"received_at" bigint NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_attempt_at" bigint,
	"next_attempt_at" bigint,
	"lease_until" bigint,
	"delivered_at" bigint,
	"lease_token" text
);
--> statement-breakpoint
CREATE TABLE "grants" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"tier" text NOT NULL,
	"scopes" text NOT NULL,
	"label" text NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" bigint NOT NULL,
	"revoked_at" bigint,
	"created_at" bigint NOT NULL,
	"last_used_at" bigint
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"store_id" text NOT NULL,
	"key" text NOT NULL,
	"operation_id" text NOT NULL,
	"request_hash" text NOT NULL,
	"status" integer NOT NULL,
	"response" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "idempotency_keys_store_id_key_pk" PRIMARY KEY("store_id","key")
);
--> statement-breakpoint
CREATE TABLE "intents" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"grant_id" text NOT NULL,
	"kind" text NOT NULL,
	"operation_id" text NOT NULL,
	"target_id" text,
	"state" text NOT NULL,
	"input" text NOT NULL,
	"preview" text NOT NULL,
	"confirmation_hash" text,
	"confirmation_expires_at" bigint,
	"result" text,
	"refusal" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "records" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"kind" text NOT NULL,
	"body" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "stores" (
	"id" text PRIMARY KEY NOT NULL,
	"platform_key" text NOT NULL,
	"platform_account_id" text NOT NULL,
	"shop_domain" text NOT NULL,
	"installation_id" text NOT NULL,
	"plan" text NOT NULL,
	"billing_status" text NOT NULL,
	"destination" text NOT NULL,
	"admin_token_env" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "stores_shop_domain_unique" UNIQUE("shop_domain")
);
--> statement-breakpoint
CREATE TABLE "trigger_readiness" (
	"store_id" text NOT NULL,
	"handle" text NOT NULL,
	"has_enabled_flow" boolean NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "trigger_readiness_store_id_handle_pk" PRIMARY KEY("store_id","handle")
);
--> statement-breakpoint
CREATE TABLE "usage_counters" (
	"store_id" text NOT NULL,
	"meter" text NOT NULL,
	"period_start" bigint NOT NULL,
	"used" integer NOT NULL,
	CONSTRAINT "usage_counters_store_id_meter_period_start_pk" PRIMARY KEY("store_id","meter","period_start")
);
--> statement-breakpoint
ALTER TABLE "endpoint_versions" ADD CONSTRAINT "endpoint_versions_endpoint_id_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."endpoints"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "endpoints" ADD CONSTRAINT "endpoints_store_id_stores_id_fk" FOREIGN KEY ("store_id") REFERENCES "public"."stores"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "grants" ADD CONSTRAINT "grants_store_id_stores_id_fk" FOREIGN KEY ("store_id") REFERENCES "public"."stores"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_store_idx" ON "audit_log" USING btree ("store_id","at");--> statement-breakpoint
CREATE INDEX "audit_at_idx" ON "audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "auth_failures_endpoint_idx" ON "auth_failures" USING btree ("endpoint_id","at");--> statement-breakpoint
CREATE INDEX "auth_failures_store_idx" ON "auth_failures" USING btree ("store_id","at");--> statement-breakpoint
CREATE INDEX "endpoints_store_idx" ON "endpoints" USING btree ("store_id","id");--> statement-breakpoint
CREATE INDEX "event_bodies_expires_idx" ON "event_bodies" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "events_store_idx" ON "events" USING btree ("store_id","id");--> statement-breakpoint
CREATE INDEX "events_store_endpoint_idx" ON "events" USING btree ("store_id","endpoint_id","id");--> statement-breakpoint
CREATE INDEX "events_store_outcome_idx" ON "events" USING btree ("store_id","outcome","id");--> statement-breakpoint
CREATE INDEX "events_due_idx" ON "events" USING btree ("next_attempt_at") WHERE "events"."next_attempt_at" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "grants_token_hash_idx" ON "grants" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "grants_store_idx" ON "grants" USING btree ("store_id","id");--> statement-breakpoint
CREATE INDEX "idempotency_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "intents_store_idx" ON "intents" USING btree ("store_id","id");--> statement-breakpoint
CREATE INDEX "records_store_kind_idx" ON "records" USING btree ("store_id","kind","id");