#!/bin/bash
# Derived hard cases from the real CC BY 4.0 one-by-one clip (intel-iot-devkit/sample-videos).
set -e
SRC=${1:?usage: make.sh one-by-one-person-detection.mp4 [out dir]}
OUT=${2:-$(dirname "$0")}
# trio: three copies at scale 0.2 (154x86, people ~75 px), stacked, middle mirrored and 0.5 s late, bottom 1.0 s late; line x=400/768
ffmpeg -v error -y -i $SRC -filter_complex "[0:v]scale=154:86,split=3[a][b0][c0];[b0]hflip,tpad=start_duration=0.5:start_mode=clone[b];[c0]tpad=start_duration=1.0:start_mode=clone[c];color=c=0x707070:s=768x576:r=10[bg];[bg][a]overlay=x=289:y=150:shortest=1[t1];[t1][b]overlay=x=357:y=240:eof_action=repeat[t2];[t2][c]overlay=x=289:y=330:eof_action=repeat,noise=alls=5:allf=t,format=yuv420p[v]" -map "[v]" -t 139 -r 10 -c:v libx264 -preset veryfast -crf 23 $OUT/trio.mp4 &
# pause: one copy at 0.22 (169x95, people ~83 px), frozen 10 s just before the line at source 43.75 and 118.35
ffmpeg -v error -y -i $SRC -filter_complex "[0:v]scale=169:95,split=3[s0][s1][s2];[s0]trim=0:43.75,setpts=PTS-STARTPTS,tpad=stop_mode=clone:stop_duration=10[p0];[s1]trim=43.75:118.35,setpts=PTS-STARTPTS,tpad=stop_mode=clone:stop_duration=10[p1];[s2]trim=118.35,setpts=PTS-STARTPTS[p2];[p0][p1][p2]concat=n=3[cat];color=c=0x707070:s=768x576:r=10[bg];[bg][cat]overlay=x=300:y=240:shortest=1,noise=alls=5:allf=t,format=yuv420p[v]" -map "[v]" -r 10 -c:v libx264 -preset veryfast -crf 23 $OUT/pause.mp4 &
# turn: at source 68.85 (centre on the line) walks back 1.5 s then on; at 119.1 (27 px past the line) back over it for 1.5 s, then on
ffmpeg -v error -y -i $SRC -filter_complex "[0:v]scale=169:95,split=5[s0][s1][s2][s3][s4];[s0]trim=0:68.85,setpts=PTS-STARTPTS[p0];[s1]trim=67.35:68.85,setpts=PTS-STARTPTS,reverse[p1];[s2]trim=67.35:119.1,setpts=PTS-STARTPTS[p2];[s3]trim=117.6:119.1,setpts=PTS-STARTPTS,reverse[p3];[s4]trim=117.6,setpts=PTS-STARTPTS[p4];[p0][p1][p2][p3][p4]concat=n=5[cat];color=c=0x707070:s=768x576:r=10[bg];[bg][cat]overlay=x=300:y=240:shortest=1,noise=alls=5:allf=t,format=yuv420p[v]" -map "[v]" -r 10 -c:v libx264 -preset veryfast -crf 23 $OUT/turn.mp4 &
wait
