/**
 * Deleting a company touches things outside the database first: stored face images, then the shop PCs' broker
 * logins. Each is a purger, run in order; the first failure stops the deletion with nothing else touched.
 * Later domains (photos, shops) add theirs in startServer.
 */
export interface CompanyPurger {
  name: string;
  /** Error code to answer with when this purger fails (e.g. 502 storage_error). */
  failure: { status: number; code: string; message: string };
  /** Returns how many things it removed (images_deleted for the image store). */
  purge(companyId: string): Promise<number>;
}
