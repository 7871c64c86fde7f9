/**
 * ICU (Node's and Chromium's Intl) lists these zones under old names that IANA keeps only as links: the IANA name is
 * the one shown and stored; the old one is still accepted and normalised (Asia/Calcutta becomes Asia/Kolkata).
 *
 * The one table of them: the console's browser code (zones.ts) and head office (server/shops/service.ts) both import
 * it. It lives here because the console is compiled on its own (tsconfig.json here, rootDir this folder); head office's
 * build compiles this file too (into dist/server/console/web/, which nothing serves). No imports: it must compile in both.
 */
export const IANA_NAMES: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara', 'America/Buenos_Aires': 'America/Argentina/Buenos_Aires', 'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan', 'America/Cordoba': 'America/Argentina/Cordoba', 'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis', 'America/Jujuy': 'America/Argentina/Jujuy', 'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza', 'Asia/Calcutta': 'Asia/Kolkata', 'Asia/Katmandu': 'Asia/Kathmandu', 'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh', 'Atlantic/Faeroe': 'Atlantic/Faroe', 'Europe/Kiev': 'Europe/Kyiv', 'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei', 'Pacific/Truk': 'Pacific/Chuuk',
};
