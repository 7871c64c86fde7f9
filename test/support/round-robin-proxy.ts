/**
 * A small HTTP reverse proxy on 127.0.0.1 in front of several head-office processes, as a load balancer would be:
 * each request goes to the next backend in turn (round robin). Bodies stream both ways as they come: a server-sent
 * event stream passes through event by event, nothing is buffered; the backend's status and headers are passed on
 * (hop-by-hop headers aside).
 *
 * A backend that refuses the connection (a killed process: nothing listens on its port) is skipped and the request
 * goes to the next one, so a process that is down does not fail the console's calls. Only a refused connection is
 * tried again elsewhere: the proxy opens its connection to a backend before it forwards anything (one connection per
 * request, none pooled, so none can be stale), so a request tried again never reached a backend. A backend that fails
 * after it took the request (killed while answering) ends that request with 502, or cuts an answer already begun, as
 * a real proxy does: sending it again could run a write twice.
 *
 * node:http only. http-proxy, the usual npm package, has had no release since 2020 and retries nothing by itself; the
 * few lines here do what the test needs and no more.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { pipeline } from 'node:stream';

export interface RoundRobinProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Requests each backend answered (its status and headers passed on), by backend index. */
  readonly answered: readonly number[];
  /** Connections each backend refused, by backend index (the request then went to the next one). */
  readonly refused: readonly number[];
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-authenticate', 'proxy-authorization']);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

/** A TCP connection to the backend, or the connect error (ECONNREFUSED when nothing listens). */
function connectTo(backend: URL): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: backend.hostname, port: Number(backend.port) });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      resolve(socket);
    });
  });
}

function badGateway(res: http.ServerResponse, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(502, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: 'bad_gateway', message }));
}

export async function startRoundRobinProxy(backendUrls: readonly string[]): Promise<RoundRobinProxy> {
  if (backendUrls.length === 0) throw new Error('a proxy needs at least one backend');
  const backends = backendUrls.map((u) => new URL(u));
  const answered = backends.map(() => 0);
  const refused = backends.map(() => 0);
  let next = 0;

  const forward = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const first = next;
    next = (next + 1) % backends.length;
    let socket: net.Socket | undefined;
    let chosen = -1;
    const errors: string[] = [];
    for (let i = 0; i < backends.length && !socket; i++) {
      const b = (first + i) % backends.length;
      try {
        socket = await connectTo(backends[b]!);
        chosen = b;
      } catch (err) {
        refused[b]!++;
        errors.push(`${backends[b]!.host}: ${(err as Error).message}`);
      }
    }
    if (!socket) return badGateway(res, `no backend took the connection (${errors.join('; ')})`);
    if (res.destroyed) return void socket.destroy(); // the client left meanwhile

    const connection = socket;
    const upstream = http.request({ method: req.method, path: req.url, headers: endToEnd(req.headers), createConnection: () => connection });
    upstream.on('response', (answer) => {
      answered[chosen]!++;
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
      res.flushHeaders(); // an event stream's head goes out now, not with its first event
      pipeline(answer, res, () => undefined); // either side closing early ends the other
    });
    upstream.on('error', (err) => badGateway(res, `${backends[chosen]!.host}: ${err.message}`));
    // The client went away before the answer ended (a closed event stream): end the backend's request too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  };

  const server = http.createServer((req, res) => void forward(req, res));
  server.requestTimeout = 0; // event streams stay open
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    answered,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
