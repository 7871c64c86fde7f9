/** The RTSP test server (node + ffmpeg, no GStreamer): agent/fixtures/rtsp-server.ts, where the benchmarks reach it too. */
export { RTSP_SOURCE_ARGV0, startRtspServer, type RtspServer, type RtspServerOptions } from '../../agent/fixtures/rtsp-server.js';
