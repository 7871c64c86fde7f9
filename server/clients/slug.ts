/**
 * Slugs: lower-case letters, digits and single dashes, no dash at either end. They are message-broker topic
 * segments, so MQTT's `/`, `+` and `#` can never appear.
 */
export const slugPattern = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** "Chai & Co. / Mumbai #1" -> "chai-co-mumbai-1" (cut to max characters, never ending in a dash). */
export function slugify(name: string, max: number): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[/+#]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, max)
    .replace(/-+$/g, '');
}

export function slugProblem(slug: string, min: number, max: number): string | undefined {
  if (slug.length < min || slug.length > max) return `must be ${min} to ${max} characters long`;
  if (!slugPattern.test(slug)) return 'may hold only lower-case letters, digits and single dashes, and must start and end with a letter or digit';
  return undefined;
}
