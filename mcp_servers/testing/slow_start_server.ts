#!/usr/bin/env node
/**
 * The fault server behind a slow start, for the hub's start-wait tests:
 *   --busy MS    uses MS ms of CPU time before speaking MCP, a third of a CPU at a time (50 ms busy, 100 ms
 *                asleep): a start spread over a long wall time, as on a crowded machine
 *   --sleep MS   sleeps MS ms without using CPU before speaking MCP: a server stuck waiting
 */
import { serve } from "../common/serve.js";
import { createFaultServer } from "./fault_server.js";

const argv = process.argv.slice(2);
const arg = (name: string) => {
  const i = argv.indexOf(name);
  return i === -1 ? 0 : Number(argv[i + 1]);
};

const busyMs = arg("--busy");
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
while (cpuMs() < busyMs) {
  const slice = cpuMs() + 50;
  while (cpuMs() < Math.min(slice, busyMs)) {
    // burning CPU on purpose, as a heavy start-up does
  }
  await new Promise((r) => setTimeout(r, 100));
}
const sleepMs = arg("--sleep");
if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
await serve(createFaultServer, []);
