/**
 * The API benchmark's bare reference: a Koa app with no middleware answering one constant JSON body (the size of a
 * GET /api/auth/me answer) on 127.0.0.1, a free port, printed as `port <n>` on stdout. Run as its own process, as
 * head office is.
 */
import Koa from 'koa';

const body = { user_id: '00000000-0000-4000-8000-000000000000', email: 'owner@bench.test', full_name: 'Owner', role: 'owner', company_id: '00000000-0000-4000-8000-000000000001', company_name: 'Bench Company' };
const app = new Koa();
app.use((ctx) => {
  ctx.body = body;
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`port ${typeof address === 'object' && address ? address.port : 0}\n`);
});
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
