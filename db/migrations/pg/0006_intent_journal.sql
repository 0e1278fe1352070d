ALTER TABLE "idempotency_keys" ADD COLUMN "owner" text;--> statement-breakpoint
ALTER TABLE "intents" ADD COLUMN "basis" text;--> statement-breakpoint
ALTER TABLE "intents" ADD COLUMN "executor" text;--> statement-breakpoint
ALTER TABLE "intents" ADD COLUMN "execute_key" text;