/**
 * A real RTSP server on 127.0.0.1 for tests: test/support/rtsp-server.py (GStreamer's RTSP server through Debian's
 * python3-gi) serving a looped H.264 file over RTSP (RTP over TCP or UDP) at one or more mount paths, optionally
 * behind basic auth.
 *
 *   const rtsp = await startRtspServer({ file: await testClip(), mounts: ['/cam1'], user: 'admin', password: 'pw' });
 *   rtsp.url('/cam1', { user: 'admin', password: 'pw' })  // rtsp://admin:pw@127.0.0.1:<port>/cam1
 *   await rtsp.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Debian's Python, which has `gi` (the pyenv python3 on PATH does not). */
export const SYSTEM_PYTHON = '/usr/bin/python3';
export const RTSP_SERVER_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'rtsp-server.py');

export interface RtspServerOptions {
  /** An MP4 with an H.264 video track (see clips.ts). */
  file: string;
  /** Mount paths, default ['/stream']. */
  mounts?: string[];
  /** Basic auth for every mount. */
  user?: string;
  password?: string;
  /** Fixed port (to stop a server and start it again where a client expects it); default a free one. */
  port?: number;
  /** Decode and re-encode the file once with x264 (for a file that is not H.264). */
  transcode?: boolean;
  /** How long to wait for the server to accept connections; default 20 s. */
  startTimeoutMs?: number;
}

export interface RtspServer {
  host: string;
  port: number;
  mounts: string[];
  /** `rtsp://[user:password@]127.0.0.1:<port><path>` (user and password URL-encoded). */
  url(mountPath?: string, auth?: { user: string; password: string }): string;
  /** SIGTERM, SIGKILL after 3 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startRtspServer(options: RtspServerOptions): Promise<RtspServer> {
  const mounts = (options.mounts?.length ? options.mounts : ['/stream']).map((m) => (m.startsWith('/') ? m : '/' + m));
  const args = [RTSP_SERVER_SCRIPT, '--file', options.file, '--port', String(options.port ?? 0)];
  for (const m of mounts) args.push('--mount', m);
  if (options.user !== undefined || options.password !== undefined) {
    args.push('--user', options.user ?? '', '--password', options.password ?? '');
  }
  if (options.transcode) args.push('--transcode');

  // stdin stays an open pipe: the server quits when it closes, so it never outlives this process.
  const child = spawn(SYSTEM_PYTHON, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  running.add(child);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
  };

  let port: number;
  try {
    port = await readyPort(child, options.startTimeoutMs ?? 20_000, () => stderr);
    await waitForListener(port, 5000);
  } catch (err) {
    await stop();
    throw err;
  }

  const host = '127.0.0.1';
  return {
    host,
    port,
    mounts,
    url(mountPath = mounts[0]!, auth) {
      const p = mountPath.startsWith('/') ? mountPath : '/' + mountPath;
      const cred = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@` : '';
      return `rtsp://${cred}${host}:${port}${p}`;
    },
    stop,
  };
}

/** Resolves with the port from the server's `READY <port>` line. */
function readyPort(child: ChildProcess, timeoutMs: number, stderr: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    const fail = (why: string) => {
      cleanup();
      reject(new Error(`RTSP test server ${why}${stderr() ? `:\n${stderr()}` : ''}`));
    };
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/^READY (\d+)$/m);
      if (m) {
        cleanup();
        resolve(Number(m[1]));
      }
    };
    const onExit = (code: number | null) => fail(`exited (code ${code}) before it was ready`);
    const onError = (err: Error) => fail(`could not start (${err.message})`);
    const timer = setTimeout(() => fail(`not ready after ${timeoutMs} ms`), timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/** Resolves once a TCP connection to 127.0.0.1:port succeeds. */
async function waitForListener(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`RTSP test server: nothing accepts connections on port ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
