-- Pictures on PostgreSQL (server/photos/pictures.ts): what the embedded store keeps as files in its data folder, here
-- so every head-office process on every machine sees the same ones; each row goes with its face_images or cameras row.
CREATE TABLE "camera_pictures" (
	"camera_id" text PRIMARY KEY NOT NULL,
	"jpeg" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "face_image_bytes" (
	"face_image_id" text PRIMARY KEY NOT NULL,
	"jpeg" "bytea" NOT NULL
);
--> statement-breakpoint
ALTER TABLE "camera_pictures" ADD CONSTRAINT "camera_pictures_camera_id_cameras_id_fk" FOREIGN KEY ("camera_id") REFERENCES "public"."cameras"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "face_image_bytes" ADD CONSTRAINT "face_image_bytes_face_image_id_face_images_id_fk" FOREIGN KEY ("face_image_id") REFERENCES "public"."face_images"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- JPEG does not compress: store the bytes as they are instead of trying pglz on every write (STORAGE EXTERNAL).
ALTER TABLE "camera_pictures" ALTER COLUMN "jpeg" SET STORAGE EXTERNAL;--> statement-breakpoint
ALTER TABLE "face_image_bytes" ALTER COLUMN "jpeg" SET STORAGE EXTERNAL;
