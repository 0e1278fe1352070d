CREATE TABLE "alert_handoffs" (
	"alert_id" text NOT NULL,
	"phase" text NOT NULL,
	"store_id" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint,
	"lease_until" bigint,
	"last_error" text,
	"delivered_at" bigint,
	"created_at" bigint NOT NULL,
	CONSTRAINT "alert_handoffs_alert_id_phase_pk" PRIMARY KEY("alert_id","phase")
);
--> statement-breakpoint
CREATE TABLE "alerts" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"endpoint_id" text,
	"kind" text NOT NULL,
	"state" text NOT NULL,
	"open_key" text,
	"since" bigint NOT NULL,
	"raised_at" bigint NOT NULL,
	"recovered_at" bigint,
	"detail" text
);
--> statement-breakpoint
CREATE TABLE "confirmations" (
	"action_run_id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"event_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"outcome" text NOT NULL,
	"note" text,
	"confirmed_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "auth_failures" ADD COLUMN "diagnosis" text;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "expected_every_ms" bigint;--> statement-breakpoint
CREATE INDEX "alert_handoffs_due_idx" ON "alert_handoffs" USING btree ("next_attempt_at") WHERE "alert_handoffs"."next_attempt_at" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "alerts_open_idx" ON "alerts" USING btree ("store_id","open_key");--> statement-breakpoint
CREATE INDEX "alerts_store_idx" ON "alerts" USING btree ("store_id","raised_at");--> statement-breakpoint
CREATE INDEX "confirmations_event_idx" ON "confirmations" USING btree ("store_id","event_id");--> statement-breakpoint
CREATE INDEX "confirmations_store_idx" ON "confirmations" USING btree ("store_id","confirmed_at");