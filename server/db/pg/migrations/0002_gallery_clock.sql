CREATE TABLE "gallery_clocks" (
	"company_id" text PRIMARY KEY NOT NULL,
	"tick" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "customers" ADD COLUMN "gallery_tick" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "gallery_clocks" ADD CONSTRAINT "gallery_clocks_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "customers_gallery_tick_idx" ON "customers" USING btree ("company_id","gallery_tick");