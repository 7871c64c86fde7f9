#!/usr/bin/python3
"""A real RTSP server for tests: GStreamer's RTSP server (Debian's python3-gi + gir1.2-gst-rtsp-server-1.0).

Serves one H.264 MP4 file, looped forever, at one or more mount paths, over RTSP with RTP over TCP
(interleaved) or UDP, whichever the client asks for. Optional basic auth (one user) so tests can see a 401.

    /usr/bin/python3 rtsp-server.py --file clip.mp4 [--port 0] [--mount /cam1 ...] [--user U --password P]

Binds 127.0.0.1 only. Prints one line `READY <port>` on stdout once it accepts connections, then runs until
SIGTERM / SIGINT or, when stdin is a pipe, until it closes (so it never outlives the test process that started it).

The file's H.264 access units are read once into memory (no decoding: next to no CPU; `--transcode` decodes
and re-encodes them once with x264enc, for files that are not H.264). Every client gets its own pipeline that
starts on the clip's first keyframe and pushes the access units through an appsrc again and again, adding one
clip length to the timestamps on each pass, so RTP timestamps keep rising and the client sees one endless
stream. (Seeking the media back to the start on EOS does not work: the RTSP media's sinks keep the old segment.)
"""

import argparse
import os
import signal
import stat
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", required=True, help="MP4 file with an H.264 video track")
    p.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1; 0 picks a free one")
    p.add_argument("--mount", action="append", default=[], help="mount path, e.g. /cam1 (repeatable)")
    p.add_argument("--user", help="basic-auth user name; with --password, every mount needs it")
    p.add_argument("--password", help="basic-auth password")
    p.add_argument("--transcode", action="store_true", help="decode and re-encode with x264enc")
    return p.parse_args()


def quote(path):
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Clip:
    """The file's H.264 access units, read once into memory (a few hundred kB for a short clip)."""

    def __init__(self, file, transcode):
        if transcode:
            video = (
                "decodebin ! videoconvert ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=25 "
                "bitrate=1500 ! video/x-h264,profile=constrained-baseline ! h264parse"
            )
        else:
            video = "h264parse"
        pipeline = Gst.parse_launch(
            f"filesrc location={quote(file)} ! qtdemux name=demux demux.video_0 ! queue ! {video} "
            "! video/x-h264,stream-format=avc,alignment=au ! appsink name=sink sync=false"
        )
        sink = pipeline.get_by_name("sink")
        pipeline.set_state(Gst.State.PLAYING)
        self.caps = None
        self.units = []  # (data, dts, pts, duration, keyframe), times in ns from the first access unit
        while True:
            sample = sink.emit("try-pull-sample", 30 * Gst.SECOND)
            if sample is None:
                break
            buf = sample.get_buffer()
            keyframe = not buf.has_flags(Gst.BufferFlags.DELTA_UNIT)
            if not self.units and not keyframe:
                continue  # start on a keyframe
            self.caps = sample.get_caps()
            ok, info = buf.map(Gst.MapFlags.READ)
            data = GLib.Bytes.new(bytes(info.data))
            buf.unmap(info)
            dts = buf.dts if buf.dts != Gst.CLOCK_TIME_NONE else buf.pts
            duration = buf.duration if buf.duration != Gst.CLOCK_TIME_NONE else Gst.SECOND // 25
            self.units.append((data, dts, buf.pts, duration, keyframe))
        pipeline.set_state(Gst.State.NULL)
        if not self.units:
            sys.exit(f"rtsp-server: no H.264 video in {file} (try --transcode)")
        start = self.units[0][1]
        self.units = [(d, dts - start, pts - start, dur, key) for d, dts, pts, dur, key in self.units]
        _, last_dts, _, last_duration, _ = self.units[-1]
        self.length = last_dts + last_duration  # one pass, in nanoseconds

    def feed(self, appsrc):
        """Connects appsrc's need-data to a feeder that pushes the clip again and again, time running on."""
        appsrc.set_property("caps", self.caps)
        state = {"index": 0, "offset": 0}

        def need_data(src, _length):
            data, dts, pts, duration, keyframe = self.units[state["index"]]
            # A new GstBuffer every time: gi's Buffer.copy() shares the timestamps with the original.
            buf = Gst.Buffer.new_wrapped_bytes(data)
            buf.dts = dts + state["offset"]
            buf.pts = pts + state["offset"]
            buf.duration = duration
            if not keyframe:
                buf.set_flags(Gst.BufferFlags.DELTA_UNIT)
            state["index"] += 1
            if state["index"] == len(self.units):
                state["index"] = 0
                state["offset"] += self.length
            src.emit("push-buffer", buf)

        appsrc.connect("need-data", need_data)


class LoopingFactory(GstRtspServer.RTSPMediaFactory):
    """Every client gets its own pipeline, fed from the clip in memory from its first keyframe."""

    def __init__(self, clip):
        super().__init__()
        self.clip = clip
        self.set_launch("( appsrc name=src format=time ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=-1 )")
        self.set_shared(False)

    def do_configure(self, media):
        GstRtspServer.RTSPMediaFactory.do_configure(self, media)
        self.clip.feed(media.get_element().get_by_name("src"))


def basic_auth(user, password):
    auth = GstRtspServer.RTSPAuth()
    token = GstRtspServer.RTSPToken()
    token.set_string("media.factory.role", "user")
    auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
    permissions = GstRtspServer.RTSPPermissions()
    permissions.add_role_from_structure(
        Gst.Structure.new_from_string("user, media.factory.access=(boolean)true, media.factory.construct=(boolean)true")
    )
    return auth, permissions


def main():
    args = parse_args()
    if not os.path.isfile(args.file):
        sys.exit(f"rtsp-server: no such file: {args.file}")
    if (args.user is None) != (args.password is None):
        sys.exit("rtsp-server: --user and --password go together")
    mounts = args.mount or ["/stream"]

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))

    permissions = None
    if args.user is not None:
        auth, permissions = basic_auth(args.user, args.password)
        server.set_auth(auth)

    clip = Clip(args.file, args.transcode)
    points = server.get_mount_points()
    for mount in mounts:
        factory = LoopingFactory(clip)
        factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP | GstRtsp.RTSPLowerTrans.UDP)
        if permissions is not None:
            factory.set_permissions(permissions)
        points.add_factory(mount if mount.startswith("/") else "/" + mount, factory)

    loop = GLib.MainLoop()
    if server.attach(None) == 0:
        sys.exit(f"rtsp-server: could not listen on 127.0.0.1:{args.port}")

    def quit_loop(*_):
        loop.quit()
        return False

    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGTERM, quit_loop)
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGINT, quit_loop)
    # When stdin is a pipe, its closing means the parent went away: stop with it.
    if stat.S_ISFIFO(os.fstat(0).st_mode):
        stdin = GLib.IOChannel.unix_new(0)
        GLib.io_add_watch(stdin, GLib.PRIORITY_DEFAULT, GLib.IOCondition.HUP | GLib.IOCondition.IN, quit_loop)

    print(f"READY {server.get_bound_port()}", flush=True)
    loop.run()


if __name__ == "__main__":
    main()
