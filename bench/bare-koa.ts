/**
 * The API benchmark's bare reference: a Koa app with no middleware answering one constant JSON body (the size of a
 * GET /api/auth/me answer) on 127.0.0.1, a free port, printed as `port <n>` on stdout. Run as its own process, as
 * head office is.
 *
 * For `npm run bench -- api-floor` only: BARE_SPIN_US=n busy-waits n microseconds in each request (work of a known
 * size), and BARE_HTTP=1 answers with plain node:http instead of Koa (the same body and headers Koa sends).
 */
import http from 'node:http';
import Koa from 'koa';

const body = { user_id: '00000000-0000-4000-8000-000000000000', email: 'owner@bench.test', full_name: 'Owner', role: 'owner', company_id: '00000000-0000-4000-8000-000000000001', company_name: 'Bench Company' };
const spinMs = Number(process.env.BARE_SPIN_US ?? 0) / 1000;
const spin = () => {
  if (spinMs <= 0) return;
  const until = performance.now() + spinMs;
  while (performance.now() < until);
};

let server: http.Server;
if (process.env.BARE_HTTP === '1') {
  const text = JSON.stringify(body);
  server = http.createServer((_req, res) => {
    spin();
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text);
  });
  server.listen(0, '127.0.0.1', ready);
} else {
  const app = new Koa();
  app.use((ctx) => {
    spin();
    ctx.body = body;
  });
  server = app.listen(0, '127.0.0.1', ready);
}
function ready() {
  const address = server.address();
  process.stdout.write(`port ${typeof address === 'object' && address ? address.port : 0}\n`);
}
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
